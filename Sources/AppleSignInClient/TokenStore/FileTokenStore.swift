public import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A token store in one JSON file, readable only by its owner (mode 0600) and replaced atomically on every write.
///
/// A write goes to a new temporary file in the same directory, created with mode 0600 (so the tokens never sit in a
/// file others can open), is flushed to disk, then renamed over the old file. A missing directory is created with
/// mode 0700. Writing `TokenStoreContents.empty` deletes the file. For apps on Linux, command-line tools and tests;
/// on Apple platforms prefer `KeychainTokenStore`.
/// - Warning: the file holds bearer credentials: put it in a directory only this user can read.
public struct FileTokenStore: TokenStore {
    /// The file.
    public let url: URL

    /// A store in the file at `url` (a file URL).
    public init(url: URL) {
        self.url = url
    }

    public func read() throws -> TokenStoreContents {
        guard FileManager.default.fileExists(atPath: url.path) else { return .empty }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw SiwaClientError(.tokenStore, "cannot read the token file", underlying: error)
        }
        return try TokenStoreContents.decode(data)
    }

    public func write(_ contents: TokenStoreContents) throws {
        guard contents != .empty else {
            try remove()
            return
        }
        let data = try contents.encoded()
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(
                at: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw SiwaClientError(.tokenStore, "cannot create the token file's directory", underlying: error)
        }
        let temporary = directory.appendingPathComponent(
            ".\(url.lastPathComponent).\(String(UInt64.random(in: .min ... .max), radix: 16)).tmp"
        ).path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SiwaClientError(.tokenStore, "cannot create a temporary token file (errno \(errno))")
        }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            // The mode given to open() is reduced by the umask; make it exactly 0600.
            guard fchmod(descriptor, 0o600) == 0 else {
                close(descriptor)
                throw SiwaClientError(.tokenStore, "cannot set the token file's mode (errno \(errno))")
            }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            do {
                try handle.write(contentsOf: data)
                try handle.synchronize()
                try handle.close()
            } catch {
                throw SiwaClientError(.tokenStore, "cannot write the token file", underlying: error)
            }
        }
        guard rename(temporary, url.path) == 0 else {
            throw SiwaClientError(.tokenStore, "cannot replace the token file (errno \(errno))")
        }
        renamed = true
    }

    private func remove() throws {
        guard unlink(url.path) == 0 || errno == ENOENT else {
            throw SiwaClientError(.tokenStore, "cannot delete the token file (errno \(errno))")
        }
    }
}
