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

    /// Ports 0, for a doctor that should not bind siwa's default ports: another test's process may hold 8080 or 9464
    /// at that moment, which doctor would rightly call a problem. A test of the listener check sets its own.
    static let unboundListeners = ["SIWA_PORT": "0", "SIWA_METRICS_PORT": "0"]

    /// Runs `siwa` with `arguments` and waits for it off Swift's cooperative pool (see `offCooperativePool`). `doctor`
    /// runs with ``unboundListeners`` unless `extra` names the ports.
    static func run(
        _ arguments: [String],
        stdin: String? = nil,
        environment extra: [String: String] = [:],
        directory: URL? = nil
    ) async throws -> Result {
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        if arguments.first == "doctor" { environment.merge(unboundListeners) { $1 } }
        environment.merge(extra) { $1 }
        let (status, stdout, stderr) = try await runChildProcess(
            executable.path,
            arguments: arguments,
            environment: environment,
            directory: directory?.path,
            stdin: stdin
        )
        return Result(
            status: status,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }

    /// Starts `siwa emulator` in `directory` on a free port below the harnesses' ports and the ephemeral range, and
    /// waits until it serves its keys. Stop it with ``stopEmulator(_:)``.
    /// - Parameter arguments: more of its arguments, such as `--config FILE`.
    static func startEmulator(
        in directory: URL,
        arguments: [String] = []
    ) async throws -> (process: ChildProcess, port: Int) {
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        let emulator = try ChildProcess(
            executable.path,
            arguments: ["emulator", "--port", String(port)] + arguments,
            directory: directory.path
        )
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

    /// Stops an emulator started by ``startEmulator(in:arguments:)`` (SIGINT: graceful).
    static func stopEmulator(_ emulator: ChildProcess) {
        emulator.terminate(signal: SIGINT)
    }

    struct EmulatorNotUp: Error, CustomStringConvertible {
        let port: Int
        var description: String { "siwa emulator did not come up on port \(port)" }
    }
}

extension SiwaProcess {
    /// Waits until a `siwa serve` started by the test answers `/healthz` on `port` (10 s at most, while it starts).
    static func waitUntilServing(port: Int) async throws -> Bool {
        for _ in 0..<200 {
            if (try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/healthz")!)) != nil {
                return true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Starts `siwa serve` in `folder` on a free port below the harnesses' ports and the ephemeral range, with
    /// `settings` over this process's environment (its own `SIWA_*` variables left out), writing its output to
    /// `serve-<port>.log` in the folder; without a metrics listener unless `settings` names its port. Stop it with
    /// `terminate`.
    static func startServe(
        in folder: TemporaryFolder,
        settings: [String: String]
    ) throws -> (process: ChildProcess, port: Int, log: String) {
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        let log = folder.url.appendingPathComponent("serve-\(port).log").path
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") }
        environment.merge(settings) { $1 }
        environment["SIWA_PORT"] = String(port)
        // No metrics listener unless asked for: tests run side by side, and the default port is one.
        environment["SIWA_METRICS_PORT"] = settings["SIWA_METRICS_PORT"] ?? "0"
        let server = try ChildProcess(
            executable.path,
            arguments: ["serve"],
            environment: environment,
            directory: folder.path,
            stdout: log,
            stderr: log
        )
        return (server, port, log)
    }
}

extension SiwaProcess {
    /// POSTs `body` as JSON to the control API of the emulator on `port` (`/emulator/…`) and returns its JSON answer.
    static func emulatorControl(port: Int, _ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode
        guard status == 200, let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw EmulatorAnswer(path: path, status: status, body: String(decoding: data, as: UTF8.self))
        }
        return answer
    }

    /// Every call the emulator on `port` received (`GET /emulator/log`): endpoint, grant type, client id, outcome.
    static func emulatorLog(port: Int) async throws -> [[String: Any]] {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/emulator/log")!)
        guard let log = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
            throw EmulatorAnswer(path: "/emulator/log", status: nil, body: String(decoding: data, as: UTF8.self))
        }
        return log
    }

    struct EmulatorAnswer: Error, CustomStringConvertible {
        let path: String
        let status: Int?
        let body: String
        var description: String {
            "the emulator answered \(path) with \(status.map(String.init) ?? "no status"): \(body)"
        }
    }
}
