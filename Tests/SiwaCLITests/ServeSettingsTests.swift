import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `siwa serve` refuses a bad setting before it opens anything, naming the variable.
@Suite("siwa serve settings")
struct ServeSettingsTests {
    @Test(arguments: [
        ("SIWA_IDLE_TIMEOUT", "soon"), ("SIWA_IDLE_TIMEOUT", "-1"), ("SIWA_MAX_HEADER_SIZE", "10"),
        ("SIWA_USER_CACHE_SIZE", "0"),
        ("SIWA_COMPAT", "servicestack,django"), ("SIWA_SERVICESTACK_TOKEN_COOKIES", "maybe"),
        ("SIWA_ACCOUNT_DELETION_MODE", "shred"), ("SIWA_ALLOWED_ANDROID_PACKAGES", "not a package"),
        ("SIWA_TRUSTED_PROXIES", "proxy.internal"), ("SIWA_TRUSTED_PROXIES", "10.0.0.0/40"),
        ("SIWA_FORWARDED_HEADER", "x-real-ip"), ("SIWA_MAX_CONNECTIONS", "lots"),
        ("SIWA_MAX_CONNECTIONS_PER_ADDRESS", "0"), ("SIWA_REQUEST_HEAD_TIMEOUT", "0"),
        ("SIWA_REQUEST_BODY_TIMEOUT", "forever"), ("SIWA_REFRESH_REUSE_GRACE", "999"),
        ("SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN", "-1"), ("SIWA_ADMIN_USERS", "boss@example.com"),
        ("SIWA_AUDIT_RETENTION_DAYS", "0"), ("SIWA_AUDIT_RETENTION_DAYS", "3651"),
        ("SIWA_DATABASE_MAX_CONNECTIONS", "0"), ("SIWA_DATABASE_MAX_CONNECTIONS", "2.5"),
        ("SIWA_DATABASE_MAX_CONNECTIONS", "1001"), ("SIWA_APPLE_KEY_SET", "not json"),
        ("SIWA_APPLE_KEY_SET", #"{"keys": [{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"}]}"#),
        ("SIWA_APPLE_KEY_SET", #"{"keys": [{"kty": "RSA", "alg": "RS256", "n": "AQAB", "e": "AQAB"}]}"#),
        ("SIWA_APPLE_KEY_SET_MODE", "sometimes"),
    ])
    func aBadSettingStopsStartUpNamingIt(variable: String, value: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await SiwaProcess.run(
            ["serve"],
            environment: [
                variable: value, "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_PORT": "0",
                "SIWA_DATABASE_PATH": directory.appendingPathComponent("s.sqlite").path,
                "SIWA_DATA_KEY_FILE": directory.appendingPathComponent("k").path,
            ]
        )
        #expect(result.status != 0)
        #expect(result.stderr.contains(variable), "stderr: \(result.stderr)")
        #expect(!result.stderr.contains(".0 to"), "ranges read as people write them: \(result.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: directory.appendingPathComponent("s.sqlite").path),
            "nothing is created before the settings are valid"
        )
    }

    /// Started under systemd's default soft limit of 1,024 open files, `serve` raises it to the hard limit (so that a
    /// connection flood is refused by siwa's own cap, not ended by a failed descriptor), and creates its data key and
    /// database readable by their owner only.
    @Test func serveRaisesItsOpenFileLimitAndKeepsItsFilesPrivate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        var environment = ProcessInfo.processInfo.environment
        environment.merge([
            "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_PORT": String(port), "SIWA_METRICS_PORT": "0",
            "SIWA_DATABASE_PATH": directory.appendingPathComponent("s.sqlite").path,
            "SIWA_DATA_KEY_FILE": directory.appendingPathComponent("data.key").path,
        ]) { $1 }
        let server = try ChildProcess(
            "/usr/bin/prlimit",
            arguments: ["--nofile=1024:", "--", SiwaProcess.executable.path, "serve"],
            environment: environment,
            stdout: directory.appendingPathComponent("serve.log").path,
            stderr: directory.appendingPathComponent("serve.log").path
        )
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(try await SiwaProcess.waitUntilServing(port: port), "siwa serve did not come up")
        let limits = try String(contentsOfFile: "/proc/\(server.pid)/limits", encoding: .utf8)
        let openFiles = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = openFiles.split(separator: " ", omittingEmptySubsequences: true)
        #expect(fields.count >= 5 && fields[3] == fields[4], "soft limit raised to the hard one: \(openFiles)")
        #expect(fields.count >= 5 && fields[3] != "1024" || fields[4] == "1024", "\(openFiles)")
        for file in ["data.key", "s.sqlite"] {
            let path = directory.appendingPathComponent(file).path
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file) is \(String(mode ?? 0, radix: 8)), not 600")
        }
    }

    /// A lost data-key file, or another key, stops start-up naming the setting before anything is served; the key file
    /// created for nothing is removed again, so that the right one can be restored.
    @Test func aMissingOrWrongDataKeyStopsStartUpNamingTheSetting() async throws {
        try await withTemporaryFolder("siwa-data-key") { folder in
            let keyFile = folder.url.appendingPathComponent("siwa-data.key").path
            let environment = [
                "SIWA_BUNDLE_IDS": "com.example.app",
                "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("s.sqlite").path,
                "SIWA_DATA_KEY_FILE": keyFile,
            ]
            // Set up: the schema, the data key and a signing key sealed with it.
            #expect(try await SiwaProcess.run(["migrate"], environment: environment).status == 0)
            #expect(try await SiwaProcess.run(["keys", "rotate"], environment: environment).status == 0)
            let original = try String(contentsOfFile: keyFile, encoding: .utf8)

            try FileManager.default.removeItem(atPath: keyFile)
            let lost = try await SiwaProcess.run(["serve"], environment: environment.merging(["SIWA_PORT": "0"]) { $1 })
            #expect(lost.status == 2)
            #expect(lost.stderr.contains("SIWA_DATA_KEY_FILE"), "\(lost.stderr)")
            #expect(lost.stderr.contains("restore that key file"))
            #expect(!FileManager.default.fileExists(atPath: keyFile), "no new key is left in place of the lost one")

            let other = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            let wrong = try await SiwaProcess.run(
                ["serve"],
                environment: environment.merging(["SIWA_PORT": "0", "SIWA_DATA_KEY": other]) { $1 }
            )
            #expect(wrong.status == 2)
            #expect(wrong.stderr.contains("SIWA_DATA_KEY:"), "\(wrong.stderr)")
            #expect(wrong.stderr.contains("not the key this database was set up with"))

            // keys rotate unseals too: refused the same way, and the restored key works again.
            let rotateWrong = try await SiwaProcess.run(
                ["keys", "rotate"],
                environment: environment.merging(["SIWA_DATA_KEY": other]) { $1 }
            )
            #expect(rotateWrong.status == 2)
            try original.write(toFile: keyFile, atomically: true, encoding: .utf8)
            #expect(try await SiwaProcess.run(["keys", "rotate"], environment: environment).status == 0)
        }
    }
}
