import Foundation
import SiwaTesting

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
}
