import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `siwa demo` and `siwa emulator` as a newcomer first meets them: the banner only once the ports are bound, written
/// at once even into a file, and a busy port named with the flag that changes it.
@Suite("siwa demo and emulator start-up")
struct DemoCommandTests {
    /// Listens on a free port of 127.0.0.1 until closed: a port some other program holds.
    final class BusyPort {
        let port: Int
        private let descriptor: Int32

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.descriptor = descriptor
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, length) == 0 && listen(descriptor, 1) == 0
                        && getsockname(descriptor, $0, &length) == 0
                }
            }
            guard bound else { throw CocoaError(.fileWriteUnknown) }
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(descriptor) }
    }

    private static func folder() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test(arguments: ["demo", "emulator"])
    func aBusyPortIsNamedWithTheFlagThatChangesIt(command: String) async throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let busy = try BusyPort()
        let arguments =
            command == "demo"
            ? [
                "demo", "--port", String(busy.port), "--emulator-port",
                String(try freeLoopbackPort(in: 10_000..<20_000)),
            ]
            : ["emulator", "--port", String(busy.port)]
        let result = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(["NO_COLOR": "1"]) { $1 },
            directory: directory.path
        )
        let stdout = String(decoding: result.stdout, as: UTF8.self)
        let stderr = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status != 0)
        #expect(stderr.contains("port \(busy.port) is in use") && stderr.contains("--port"), "stderr: \(stderr)")
        #expect(!stdout.contains("is running") && !stdout.contains("listening"), "no banner for a port not bound")
    }

    /// A running `siwa demo` in a folder of its own, its standard output and error in files there.
    final class Demo {
        let directory: URL
        let port: Int
        let emulatorPort: Int
        let process: ChildProcess
        var log: String { directory.appendingPathComponent("demo.log").path }
        var errors: String { directory.appendingPathComponent("demo.err").path }

        init(environment: [String: String]? = nil) throws {
            directory = try DemoCommandTests.folder()
            port = try freeLoopbackPort(in: 10_000..<20_000)
            emulatorPort = try freeLoopbackPort(in: 10_000..<20_000)
            process = try ChildProcess(
                SiwaProcess.executable.path,
                arguments: ["demo", "--port", String(port), "--emulator-port", String(emulatorPort)],
                environment: environment,
                directory: directory.path,
                stdout: directory.appendingPathComponent("demo.log").path,
                stderr: directory.appendingPathComponent("demo.err").path
            )
        }

        /// Its standard output once the banner is in it (or after 20 s).
        func banner() async throws -> String {
            var banner = ""
            for _ in 0..<400 where !banner.contains("siwa demo is running") {
                try await Task.sleep(for: .milliseconds(50))
                banner = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            }
            return banner
        }

        deinit {
            process.terminate(signal: SIGTERM)
            _ = process.waitForExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func theDemoBannerComesOnceTheServerAnswersAndReachesAFileAtOnce() async throws {
        let demo = try Demo()
        let (port, emulatorPort) = (demo.port, demo.emulatorPort)
        let banner = try await demo.banner()
        #expect(banner.contains("siwa demo is running"), "the banner is in the file while the demo runs")
        // Its callbacks are on http://localhost, which Apple refuses: the demo allows them, and says so once.
        #expect(banner.components(separatedBy: "allows http, localhost and IP-address redirect URIs").count == 2)
        // Printed only once both ports were bound: both answer now.
        let server = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/healthz")!)
        #expect((server.1 as? HTTPURLResponse)?.statusCode == 200)
        let emulator = try await URLSession.shared.data(
            from: URL(string: "http://127.0.0.1:\(emulatorPort)/auth/keys")!
        )
        #expect((emulator.1 as? HTTPURLResponse)?.statusCode == 200)
    }

    /// The demo reads the operator's settings over its own (here the log format), and an operator command run in its
    /// folder knows the demo's Apple side: deleting a demo user revokes the user's token at the demo's emulator (it
    /// found "no Apple credentials" before), printing its answer with no info lines on standard error.
    @Test func theDemoReadsTheSettingsAndItsFolderKnowsItsAppleSide() async throws {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") }
        environment["SIWA_LOG_FORMAT"] = "json"
        let demo = try Demo(environment: environment)
        let (port, emulatorPort, errors, directory) = (demo.port, demo.emulatorPort, demo.errors, demo.directory)
        try #require(
            try await demo.banner().contains("siwa demo is running"),
            "\((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")"
        )

        func post(_ url: String, _ body: [String: String]) async throws -> [String: Any] {
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "content-type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            let (data, response) = try await URLSession.shared.data(for: request)
            try #require((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let credential = try await post(
            "http://127.0.0.1:\(emulatorPort)/emulator/native-sign-in",
            ["clientId": "com.example.siwa.demo", "email": "dee@example.com", "givenName": "Dee"]
        )
        _ = try await post(
            "http://127.0.0.1:\(port)/auth/apple/native",
            [
                "identityToken": try #require(credential["identityToken"] as? String),
                "authorizationCode": try #require(credential["authorizationCode"] as? String),
            ]
        )
        // The access line of that sign-in, in JSON as SIWA_LOG_FORMAT asked.
        let lines = try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n")
        #expect(
            lines.contains { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["level"] as? String
                    == "info"
            },
            "\(lines.prefix(5))"
        )

        let delete = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["users", "delete", "dee@example.com", "--yes"],
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") },
            directory: directory.path
        )
        let stdout = String(decoding: delete.stdout, as: UTF8.self)
        let stderr = String(decoding: delete.stderr, as: UTF8.self)
        #expect(delete.status == 0, "\(stderr)")
        #expect(stdout.contains("Apple token revoked at Apple"), "\(stdout)")
        #expect(!stderr.contains(" info "), "only warnings on stderr: \(stderr)")
    }
}
