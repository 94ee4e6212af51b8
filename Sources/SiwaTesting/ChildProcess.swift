public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for tests that run `siwa`, chromedriver or Python.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` with an over-long copy of each directory
/// entry and crashes now and then in a process with many open descriptors, such as this test process with its
/// servers and databases (swift-corelibs-foundation#5472, fixed after Swift 6.3.1's Foundation). Output goes to files,
/// not pipes, so that no reader can block the child.
public final class ChildProcess: Sendable {
    public let pid: pid_t

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - environment: The child's whole environment (`nil`: this process's).
    ///   - directory: The child's working directory (`nil`: this process's).
    ///   - stdin: A file to read standard input from (`nil`: `/dev/null`).
    ///   - stdout: A file for standard output, created or truncated (`nil`: `/dev/null`).
    ///   - stderr: A file for standard error (`nil`: `/dev/null`; the same path as `stdout`: both in one file).
    public init(
        _ executable: String,
        arguments: [String],
        environment: [String: String]? = nil,
        directory: String? = nil,
        stdin: String? = nil,
        stdout: String? = nil,
        stderr: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let directory {
            guard let addChdir = GlibcSpawn.addChdir else { throw SpawnError(code: ENOSYS, executable: executable) }
            _ = addChdir(&actions, directory)
        }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let stderr, stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        // The child keeps none of this process's other descriptors (listening sockets, database files).
        _ = GlibcSpawn.addCloseFrom?(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") }
        let envp = variables + [nil]
        defer { for variable in variables { free(variable) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError(code: result, executable: executable) }
        self.pid = pid
    }

    /// Whether the child has not exited (reaps it when it has).
    public var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Sends `signal` (SIGKILL unless told), then waits for the child; nothing when it has exited already.
    public func terminate(signal: Int32 = SIGKILL) {
        guard isRunning else { return }
        _ = kill(pid, signal)
        _ = waitForExit()
    }

    /// Waits for the child to exit (blocking: call it off Swift's cooperative pool, see `offCooperativePool`) and
    /// returns its exit status, or 128 + the signal that ended it. -1 when it was reaped already.
    public func waitForExit() -> Int32 {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, 0) } while result == -1 && errno == EINTR
        guard result == pid else { return -1 }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let code: Int32
        public let executable: String
        public var description: String { "posix_spawn \(executable) failed with \(code)" }
    }
}

/// Runs `executable` to its end, off Swift's cooperative pool, with `stdin` as its input, and returns its exit status
/// and what it wrote to standard output and standard error.
public func runChildProcess(
    _ executable: String,
    arguments: [String],
    environment: [String: String]? = nil,
    directory: String? = nil,
    stdin: String? = nil
) async throws -> (status: Int32, stdout: Data, stderr: Data) {
    try await offCooperativePool {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("stdin")
        try Data((stdin ?? "").utf8).write(to: input)
        let output = folder.appendingPathComponent("stdout")
        let errors = folder.appendingPathComponent("stderr")
        let child = try ChildProcess(
            executable,
            arguments: arguments,
            environment: environment,
            directory: directory,
            stdin: input.path,
            stdout: output.path,
            stderr: errors.path
        )
        let status = child.waitForExit()
        return (status, try Data(contentsOf: output), try Data(contentsOf: errors))
    }
}

/// glibc's spawn actions that Swift's Glibc module does not declare (they need `_GNU_SOURCE`); looked up at run time
/// (glibc 2.29 and 2.34 and later).
private enum GlibcSpawn {
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    static let addChdir: AddChdir? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0),
        "posix_spawn_file_actions_addchdir_np"
    )
    .map { unsafeBitCast($0, to: AddChdir.self) }
    static let addCloseFrom: AddCloseFrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0),
        "posix_spawn_file_actions_addclosefrom_np"
    ).map { unsafeBitCast($0, to: AddCloseFrom.self) }
}
