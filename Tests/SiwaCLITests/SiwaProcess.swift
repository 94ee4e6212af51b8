import Foundation
import SiwaTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs the built `siwa` executable as a subprocess, as a user would.
struct SiwaProcess {
    struct Result: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The `siwa` binary next to the test bundle (SwiftPM puts products side by side), or in `.build/debug`.
    static let executable: URL = {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("siwa")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return packageRoot.appendingPathComponent(".build/debug/siwa")
    }()

    /// Runs `siwa` with `arguments` and waits for it off Swift's cooperative pool (see `offCooperativePool`).
    static func run(
        _ arguments: [String],
        stdin: String? = nil,
        environment extra: [String: String] = [:]
    ) async throws -> Result {
        try await offCooperativePool { try runBlocking(arguments, stdin: stdin, environment: extra) }
    }

    private static func runBlocking(
        _ arguments: [String],
        stdin: String?,
        environment extra: [String: String]
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.merge(extra) { $1 }
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input
        try launchSerially(process)
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self)
        )
    }

    /// Starts `siwa emulator` in `directory` on a free port below the harnesses' ports and the ephemeral range, and
    /// waits until it serves its keys. Stop it with ``stopEmulator(_:)``.
    static func startEmulator(in directory: URL) async throws -> (process: Process, port: Int) {
        let port = Int.random(in: 10_000...19_999)
        let emulator = Process()
        emulator.executableURL = executable
        emulator.arguments = ["emulator", "--port", String(port)]
        emulator.currentDirectoryURL = directory
        emulator.standardOutput = FileHandle.nullDevice
        emulator.standardError = FileHandle.nullDevice
        try launchSerially(emulator)
        for _ in 0..<100 {
            if let (_, response) = try? await URLSession.shared.data(
                from: URL(string: "http://127.0.0.1:\(port)/auth/keys")!
            ), (response as? HTTPURLResponse)?.statusCode == 200 {
                return (emulator, port)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        stopEmulator(emulator)
        throw EmulatorNotUp(port: port)
    }

    /// Stops an emulator started by ``startEmulator(in:)`` (SIGINT: graceful).
    static func stopEmulator(_ emulator: Process) {
        guard emulator.isRunning else { return }
        emulator.interrupt()
        emulator.waitUntilExit()
    }

    struct EmulatorNotUp: Error, CustomStringConvertible {
        let port: Int
        var description: String { "siwa emulator did not come up on port \(port)" }
    }
}
