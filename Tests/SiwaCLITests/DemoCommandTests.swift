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
            ? ["demo", "--port", String(busy.port), "--emulator-port", String(Int.random(in: 10_000...19_999))]
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

    @Test func theDemoBannerComesOnceTheServerAnswersAndReachesAFileAtOnce() async throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = Int.random(in: 10_000...14_999)
        let emulatorPort = Int.random(in: 15_000...19_999)
        let log = directory.appendingPathComponent("demo.log").path
        let demo = try ChildProcess(
            SiwaProcess.executable.path,
            arguments: ["demo", "--port", String(port), "--emulator-port", String(emulatorPort)],
            directory: directory.path,
            stdout: log,
            stderr: directory.appendingPathComponent("demo.err").path
        )
        defer {
            demo.terminate(signal: SIGTERM)
            _ = demo.waitForExit()
        }
        var banner = ""
        for _ in 0..<400 where !banner.contains("siwa demo is running") {
            try await Task.sleep(for: .milliseconds(50))
            banner = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        }
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
}
