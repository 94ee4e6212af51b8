import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock beside a SQLite database (`<file>.lock`, 0600) that `siwa serve` holds shared for as long as it runs and
/// `siwa restore` exclusive while it replaces the file: a restore never runs under a serving siwa, and siwa does not
/// start in the middle of a restore. The kernel drops it when its process ends, however it ends; ``release()`` ends it
/// before, at a point of the holder's choosing.
final class DatabaseLock: Sendable {
    private let descriptor: Int32
    let file: String

    /// Who holds the lock.
    enum Mode {
        /// `siwa serve`: several may hold it at once.
        case serving
        /// `siwa restore`: alone.
        case restoring
    }

    /// Why the lock was not taken.
    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// Takes the lock of the database at `path` without waiting.
    /// - Throws: ``Refusal`` saying who holds it, or why the lock file cannot be opened.
    init(database path: String, mode: Mode) throws(Refusal) {
        file = DataKeyFile.absolute(path) + ".lock"
        let descriptor = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Refusal(description: "the lock file \(file) cannot be opened: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, (mode == .serving ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            close(descriptor)
            if !busy {
                throw Refusal(
                    description: "the lock file \(file) cannot be locked: \(String(cString: strerror(errno)))"
                )
            }
            throw Refusal(
                description: mode == .serving
                    ? "siwa restore is replacing \(DataKeyFile.absolute(path)); start siwa once it has finished"
                    : "siwa serve is running on \(DataKeyFile.absolute(path)) (it holds \(file)): stop it first "
                        + "(systemctl stop siwa, or podman stop siwa)"
            )
        }
        self.descriptor = descriptor
    }

    /// Lets the lock go; called where the holder is done, which also keeps the lock alive until there.
    func release() { flock(descriptor, LOCK_UN) }

    deinit { close(descriptor) }
}
