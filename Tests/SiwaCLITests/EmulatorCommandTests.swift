import Crypto
import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `siwa emulator` as a subprocess: demo settings printed, key file created once, serving, stopping on SIGINT.
@Suite("siwa emulator")
struct EmulatorCommandTests {
    @Test func demoEmulatorServesAndStopsCleanly() async throws {
        try await withTemporaryFolder("siwa-emu-cli") { folder in
            let port = try freeLoopbackPort(in: 10_000..<20_000)  // below the harnesses' ports and the ephemeral range
            let log = folder.url.appendingPathComponent("emulator.log").path
            let process = try ChildProcess(
                SiwaProcess.executable.path,
                arguments: ["emulator", "--port", String(port)],
                directory: folder.path,
                stdout: log,
                stderr: log
            )
            defer { process.terminate() }

            // Wait for the server, then ask it for its keys.
            var keys: Data?
            for _ in 0..<100 {
                if let (data, response) = try? await URLSession.shared.data(
                    from: URL(string: "http://127.0.0.1:\(port)/auth/keys")!
                ),
                    (response as? HTTPURLResponse)?.statusCode == 200
                {
                    keys = data
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let jwks = try #require(keys)
            let document = try #require(try JSONSerialization.jsonObject(with: jwks) as? [String: [[String: String]]])
            #expect(document["keys"]?.first?["alg"] == "RS256")

            let keyFile = folder.url.appendingPathComponent("siwa-emulator/AuthKey_DEMOKEY001.p8").path
            #expect(FileManager.default.fileExists(atPath: keyFile))
            let permissions = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
            #expect(permissions == 0o600)

            _ = kill(process.pid, SIGINT)  // graceful shutdown
            let status = try await offCooperativePool { process.waitForExit() }
            #expect(status == 0)
            let printed = try String(contentsOfFile: log, encoding: .utf8)
            #expect(printed.contains("SIWA_TEAM_ID=DEMOTEAM01"))
            #expect(printed.contains("SIWA_PRIVATE_KEY_FILE=siwa-emulator/AuthKey_DEMOKEY001.p8"))
            #expect(printed.contains("SIWA_APPLE_BASE_URL=http://127.0.0.1:\(port)"))
            // The demo team's callbacks are on http://localhost, which Apple refuses: allowed here, and said.
            #expect(printed.contains("allows http, localhost and IP-address redirect URIs"))
        }
    }

    @Test func theConsoleAnswersOnlyLoopbackAndTheHostNamesItIsGiven() async throws {
        try await withTemporaryFolder("siwa-emu-hosts") { folder in
            let port = try freeLoopbackPort(in: 10_000..<20_000)
            let log = folder.url.appendingPathComponent("emulator.log").path
            let process = try ChildProcess(
                SiwaProcess.executable.path,
                arguments: ["emulator", "--port", String(port), "--allowed-host", "emulator.test"],
                directory: folder.path,
                stdout: log,
                stderr: log
            )
            defer { process.terminate() }
            var started = false
            for _ in 0..<100 {
                if try await Self.status(port: port, path: "/auth/keys", host: nil) == 200 {
                    started = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            try #require(started, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            #expect(try await Self.status(port: port, path: "/", host: "127.0.0.1:\(port)") == 200)
            #expect(try await Self.status(port: port, path: "/", host: "emulator.test:\(port)") == 200)
            #expect(try await Self.status(port: port, path: "/emulator/log", host: "emulator.test:\(port)") == 200)
            // Any other name may be an attacker's rebound to this machine.
            #expect(try await Self.status(port: port, path: "/", host: "attacker.example:\(port)") == 421)
            #expect(try await Self.status(port: port, path: "/emulator/log", host: "attacker.example:\(port)") == 421)
        }
    }

    /// What a developer's `--config` gets wrong, and the field the refusal must name.
    static let wrongConfigurations: [(field: String, change: @Sendable (inout [String: Any]) -> Void)] = [
        ("teams[0].keyID", { $0["keyID"] = nil }),
        (
            "teams[0].publicKeyPEM",
            { $0["publicKeyPEM"] = "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----" }
        ),
        ("teams[0].clients[0].redirectURIs[0]", { $0["clients"] = [["clientID": "w", "redirectURIs": [7]]] }),
        (
            "teams[0].clients[0].redirectURIs[0]",
            { $0["clients"] = [["clientID": "w", "redirectURIs": [Self.localCallback]]] }
        ),
    ]
    static let localCallback = "http://localhost:8080/auth/apple/callback"

    @Test(arguments: wrongConfigurations.indices)
    func aConfigurationErrorNamesTheFieldAndWhatToWrite(index: Int) async throws {
        let (field, change) = Self.wrongConfigurations[index]
        try await withTemporaryFolder("siwa-emu-config") { folder in
            var team = Self.team()
            change(&team)
            let (exited, output) = try await Self.start(folder, team: team, arguments: [])
            #expect(exited, "the emulator refuses to start with \(field) wrong")
            #expect(output.contains("error: --config"), "\(output)")
            #expect(output.contains("\(field) "), "\(output)")
            #expect(output.contains(": write "), "\(output)")
            #expect(!output.contains("CodingKeys") && !output.contains("keyNotFound"), "\(output)")
            #expect(!output.contains("not a key"), "a key is never echoed")
        }
    }

    @Test func localRedirectURIsAreAllowedWhenAskedAndTheEmulatorSaysSo() async throws {
        try await withTemporaryFolder("siwa-emu-local") { folder in
            var team = Self.team()
            team["clients"] = [["clientID": "com.example.web", "redirectURIs": [Self.localCallback]]]
            let (exited, output) = try await Self.start(folder, team: team, arguments: ["--allow-local-redirect-uris"])
            #expect(!exited, "\(output)")
            #expect(output.contains("allows http, localhost and IP-address redirect URIs"), "\(output)")
        }
    }

    /// A team of a `--config` file, with a fresh key and a native-only client.
    private static func team() -> [String: Any] {
        [
            "teamID": "TEAMCONF01", "keyID": "KEYCONF001",
            "publicKeyPEM": P256.Signing.PrivateKey().publicKey.pemRepresentation,
            "clients": [["clientID": "com.example.app"]],
        ]
    }

    /// Starts `siwa emulator --config` with `team`, and returns whether it exited (rather than serving) and what it
    /// printed; a serving emulator is stopped.
    private static func start(
        _ folder: TemporaryFolder,
        team: [String: Any],
        arguments: [String]
    ) async throws -> (exited: Bool, output: String) {
        let config = folder.url.appendingPathComponent("emulator.json")
        try JSONSerialization.data(withJSONObject: ["teams": [team]]).write(to: config)
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        let log = folder.url.appendingPathComponent("emulator.log").path
        let process = try ChildProcess(
            SiwaProcess.executable.path,
            arguments: ["emulator", "--port", String(port), "--config", config.path] + arguments,
            directory: folder.path,
            stdout: log,
            stderr: log
        )
        defer { process.terminate() }
        var exited = false
        var output = ""
        // Until it exits, or serves and has said so (the banner follows the bound port by a moment).
        for _ in 0..<100 {
            output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if !process.isRunning {
                exited = true
                output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                break
            }
            if output.contains("listening"), try await status(port: port, path: "/auth/keys", host: nil) == 200 {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (exited, output)
    }

    /// The status of a GET to the emulator on 127.0.0.1, sent with `host` as its `Host` header when given.
    private static func status(port: Int, path: String, host: String?) async throws -> Int? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        if let host { request.setValue(host, forHTTPHeaderField: "Host") }
        guard let (_, response) = try? await URLSession.shared.data(for: request) else { return nil }
        return (response as? HTTPURLResponse)?.statusCode
    }
}
