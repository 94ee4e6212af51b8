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
        try replace(file, text: keys.fileText)
    }

    /// Replaces (or creates) `file` with `text` (renamed into place, 0600), durably.
    private static func replace(_ file: String, text: String) throws {
        let temporary = try writeTemporary(text, for: file)
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

    // MARK: Retired keys

    /// The folder beside `file` where retired keys are kept: `retired-data-keys`, 0700.
    static func retiredFolder(beside file: String) -> String {
        directory(of: absolute(file)) + "/retired-data-keys"
    }

    /// `path` from the root, for messages an operator copies into a shell somewhere else.
    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// Writes the key `id` of `ring` to a file of its own in ``retiredFolder(beside:)``, named by its id and the UTC
    /// date (0600; the folder is created 0700), before `file` loses it: database backups from before `retiredAt` may
    /// hold data sealed under it, and restoring one needs it. A file kept earlier the same day for the same key is
    /// replaced (the key is the same, the later time is the one that counts).
    /// - Returns: the kept file's path.
    /// - Throws: ``ServerSettings/Problem`` naming `SIWA_DATA_KEY_FILE` when the file cannot be written.
    static func keepRetired(
        _ id: DataKeyID,
        of ring: DataKeyRing,
        from file: String,
        at retiredAt: Date
    ) throws
        -> String
    {
        let folder = retiredFolder(beside: file)
        let kept = folder + "/\(id)-\(retiredAt.formatted(.iso8601.year().month().day())).key"
        let time = retiredAt.formatted(.iso8601)
        guard
            let text = ring.keyFileText(
                of: id,
                comments: [
                    "siwa data key \(id), retired \(time) from \(absolute(file)).",
                    "A backup of the database taken before \(time) may hold data sealed under it, and restoring one",
                    "needs it: with siwa stopped, add it to the key file as a later line (it then only opens):",
                    "  cat \(kept) >> \(absolute(file))",
                    "docs/deploy.md, \"Backups and restores\".",
                ]
            )
        else {
            throw ServerSettings.Problem(variable: "SIWA_DATA_KEY_FILE", fix: "\(file) holds no data key \(id)")
        }
        func cannotKeep() -> ServerSettings.Problem {
            ServerSettings.Problem(
                variable: "SIWA_DATA_KEY_FILE",
                fix: "cannot keep a copy of data key \(id) in \(folder) (errno \(errno)), so it stays in \(file): "
                    + "check the folder's permissions, or pass --forget to retire it with no copy (a database backup "
                    + "from before now that needs it then cannot be restored)"
            )
        }
        if mkdir(folder, 0o700) != 0 {
            var isFolder: ObjCBool = false
            guard errno == EEXIST, FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder),
                isFolder.boolValue
            else {
                throw cannotKeep()
            }
        }
        do {
            try replace(kept, text: text)
        } catch {
            throw cannotKeep()
        }
        return kept
    }

    /// The kept copies of the retired key `id` beside `file` (``keepRetired(_:of:from:at:)``), oldest first.
    static func keptCopies(of id: DataKeyID, beside file: String) -> [String] {
        let folder = retiredFolder(beside: file)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasPrefix("\(id)-") && $0.hasSuffix(".key") }.sorted().map { folder + "/" + $0 }
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
