import AuthServer
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The data-key file (`SIWA_DATA_KEY_FILE`): read, created on first start, and replaced by the key commands. Every write
/// goes to a temporary file created 0600 and synced, then takes the file's place in one step, so that a reader (a
/// server re-reading it) sees the old keys or the new ones, never half a file.
enum DataKeyFile {
    /// The keys in `file`, or `nil` when there is no such file.
    /// - Throws: ``ServerSettings/Problem`` naming `SIWA_DATA_KEY_FILE` and the line.
    static func read(_ file: String) throws -> DataKeyRing? {
        do {
            return try DataKeyRing.read(file: file)
        } catch {
            throw ServerSettings.Problem(
                variable: "SIWA_DATA_KEY_FILE",
                fix: "\(error); the file holds one key a line, the first sealing (# starts a comment)"
            )
        }
    }

    /// Creates `file` with one new key, unless another process (a second instance starting on the same folder) got
    /// there first: then its key is used. A new file is linked into place, which fails if one exists, and a linked
    /// file is always complete.
    static func create(_ file: String) throws -> DataKeyRing {
        let key = SymmetricKey(size: .bits256)
        let temporary = try writeTemporary(key.withUnsafeBytes { Data($0).base64EncodedString() } + "\n", for: file)
        defer { unlink(temporary) }
        if link(temporary, file) != 0 {
            guard errno == EEXIST, let theirs = try read(file) else { throw cannotWrite(file) }
            return theirs
        }
        return DataKeyRing(key: key)
    }

    /// Replaces `file` with `keys` (renamed into place, 0600).
    static func replace(_ file: String, with keys: DataKeyRing) throws {
        let temporary = try writeTemporary(keys.fileText, for: file)
        guard rename(temporary, file) == 0 else {
            let failure = cannotWrite(file)
            unlink(temporary)
            throw failure
        }
        // The rename itself is durable once the folder is synced.
        let folder = open(directory(of: file), O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    /// Runs `body` holding an exclusive lock on the key file's folder, so that two key commands changing the file at
    /// once (two operators rotating) cannot each write a ring without the other's new key.
    static func withLock<R>(_ file: String, _ body: () throws -> R) throws -> R {
        let folder = open(directory(of: file), O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else { throw cannotWrite(file) }
        defer { close(folder) }
        while flock(folder, LOCK_EX) != 0 {
            guard errno == EINTR else { throw cannotWrite(file) }
        }
        defer { flock(folder, LOCK_UN) }
        return try body()
    }

    /// Writes `text` to a new temporary file created 0600 next to `file`, synced; returns its path.
    private static func writeTemporary(_ text: String, for file: String) throws -> String {
        let bytes = Array(text.utf8)
        let temporary = file + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw cannotWrite(file) }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        let failure = cannotWrite(file)
        close(descriptor)
        guard written == bytes.count, synced else {
            unlink(temporary)
            throw failure
        }
        return temporary
    }

    private static func directory(of file: String) -> String {
        let folder = (file as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }

    private static func cannotWrite(_ file: String) -> ServerSettings.Problem {
        ServerSettings.Problem(
            variable: "SIWA_DATA_KEY_FILE",
            fix: "cannot write \(file) (errno \(errno)); check the folder's permissions, or set SIWA_DATA_KEY instead"
        )
    }
}
