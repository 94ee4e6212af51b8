import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `docs/deploy.md`, followed: the binary started from a clean folder with only the files the guide names (the
/// configuration file of `docs/deployment/siwa.json`, the team's `.p8` key), no environment but `PATH`, signs a user in
/// with Apple (the emulator plays Apple) and keeps its files private. `SIWA_RELEASE_BINARY` names a release build to
/// test (`swift build -c release --static-swift-stdlib`); the test command uses the debug build of the same code.
@Suite("The deployment guide")
struct DeploymentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func call(
        _ method: String,
        _ url: String,
        json: [String: Any]? = nil,
        bearer: String? = nil
    ) async throws -> (status: Int, body: [String: Any]) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let body = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body)
    }

    @Test func theGuidesFilesAloneRunSiwaFromACleanFolder() async throws {
        // Apple: the emulator's demo team (DEMOTEAM01, key DEMOKEY001, com.example.siwa.demo).
        try await withTemporaryFolder("siwa-deploy-apple") { apple in
            let (emulator, emulatorPort) = try await SiwaProcess.startEmulator(in: apple.url)
            defer { SiwaProcess.stopEmulator(emulator) }

            // The server's folder holds only what the guide names: siwa.json and the team's key.
            try await withTemporaryFolder("siwa-deploy") { folder in
                let keyFile = folder.url.appendingPathComponent("AuthKey_DEMOKEY001.p8").path
                try FileManager.default.copyItem(
                    atPath: apple.url.appendingPathComponent("siwa-emulator/AuthKey_DEMOKEY001.p8").path,
                    toPath: keyFile
                )
                let example = try Data(contentsOf: Self.root.appendingPathComponent("docs/deployment/siwa.json"))
                var configuration = try #require(try JSONSerialization.jsonObject(with: example) as? [String: Any])
                let port = Int.random(in: 10_000...19_999)
                // The guide's file with this machine's values: the team, its key, Apple's address, the folders.
                configuration.merge([
                    "port": port, "appleBaseURL": "http://127.0.0.1:\(emulatorPort)", "teamID": "DEMOTEAM01",
                    "keyID": "DEMOKEY001", "privateKeyFile": keyFile, "bundleIDs": ["com.example.siwa.demo"],
                    "servicesID": "com.example.siwa.demo.web",
                    "dataKeyFile": folder.url.appendingPathComponent("siwa-data.key").path,
                    "database": ["path": folder.url.appendingPathComponent("siwa.sqlite").path],
                ]) { $1 }
                try JSONSerialization.data(withJSONObject: configuration)
                    .write(to: folder.url.appendingPathComponent("siwa.json"))

                let binary = ProcessInfo.processInfo.environment["SIWA_RELEASE_BINARY"] ?? SiwaProcess.executable.path
                let bare = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
                let doctor = try await runChildProcess(
                    binary,
                    arguments: ["doctor", "--config", "siwa.json"],
                    environment: bare,
                    directory: folder.path
                )
                #expect(
                    doctor.status != 1,
                    "doctor says serve would refuse: \(String(decoding: doctor.stdout, as: UTF8.self))"
                )

                let log = folder.url.appendingPathComponent("serve.log").path
                let server = try ChildProcess(
                    binary,
                    arguments: ["serve", "--config", "siwa.json"],
                    environment: bare,
                    directory: folder.path,
                    stdout: log,
                    stderr: log
                )
                defer {
                    server.terminate(signal: SIGTERM)
                }
                try #require(try await SiwaProcess.waitUntilServing(port: port), "siwa serve did not start")
                let base = "http://127.0.0.1:\(port)"
                #expect(try await call("GET", base + "/readyz").status == 200)

                let credential = try await call(
                    "POST",
                    "http://127.0.0.1:\(emulatorPort)/emulator/native-sign-in",
                    json: ["clientId": "com.example.siwa.demo", "email": "deployed@example.com", "givenName": "Dee"]
                )
                try #require(credential.status == 200, "\(credential.body)")
                let signIn = try await call(
                    "POST",
                    base + "/auth/apple/native",
                    json: [
                        "identityToken": try #require(credential.body["identityToken"] as? String),
                        "authorizationCode": try #require(credential.body["authorizationCode"] as? String),
                    ]
                )
                #expect(signIn.status == 200, "\(signIn.body)")
                let accessToken = try #require(signIn.body["accessToken"] as? String)
                let me = try await call("GET", base + "/api/me", bearer: accessToken)
                #expect(me.status == 200)
                #expect(me.body["email"] as? String == "deployed@example.com", "\(me.body)")

                for file in ["siwa-data.key", "siwa.sqlite"] {
                    let mode =
                        try FileManager.default.attributesOfItem(
                            atPath: folder.url.appendingPathComponent(file).path
                        )[.posixPermissions] as? Int
                    #expect(mode == 0o600, "\(file) is \(String(mode ?? 0, radix: 8)), not 600")
                }
                // The operator's commands read the same file.
                let users = try await runChildProcess(
                    binary,
                    arguments: ["users", "list", "--config", "siwa.json"],
                    environment: bare,
                    directory: folder.path
                )
                #expect(String(decoding: users.stdout, as: UTF8.self).contains("deployed@example.com"))
                // The log is JSON lines, as the guide's file asks.
                let firstLine = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").first ?? ""
                #expect(firstLine.hasPrefix(#"{"time":"#), "\(firstLine)")
            }
        }
    }

    /// The guide names the files the test above and the proxy tests use, so that it cannot describe others.
    @Test func theGuideNamesTheTestedFiles() throws {
        let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/deploy.md"), encoding: .utf8)
        for name in [
            "deployment/siwa.json", "deployment/siwa.service", "deployment/nginx-proxy.conf",
            "deployment/nginx-tls.conf", "swift build -c release --static-swift-stdlib", "LimitNOFILE",
            "siwa migrate", "pg_dump", ".backup",
        ] {
            #expect(guide.contains(name), "docs/deploy.md does not mention \(name)")
        }
        let unit = try String(
            contentsOf: Self.root.appendingPathComponent("docs/deployment/siwa.service"),
            encoding: .utf8
        )
        #expect(unit.contains("ExecStart=/usr/local/bin/siwa serve --config /etc/siwa/siwa.json"))
    }
}
