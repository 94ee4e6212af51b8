import AccountStore
import AccountStoreSQL
import AppleSignIn
import Crypto
import Foundation
import Logging
import SiwaTesting
import Testing

@testable import SiwaCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One configuration for every command: a JSON or YAML file, `.env`, `<VARIABLE>_FILE` secret files and `SIWA_*`
/// variables over them, read by `serve`, `doctor` and the operator commands through the same code.
@Suite("siwa configuration")
struct ConfigurationTests {
    let folder = try! TemporaryFolder("siwa-config")
    var directory: URL { folder.url }

    /// The process environment without any SIWA_* variable of the test run's own, so that only the test's count.
    private func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") }
        environment["NO_COLOR"] = "1"
        environment.merge(extra) { $1 }
        return environment
    }

    private func doctor(
        _ arguments: [String],
        _ environment: [String: String] = [:]
    ) async throws -> (
        status: Int32, findings: [(setting: String, ok: Bool, message: String)], stdout: String
    ) {
        let (status, out, _) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["doctor", "--json"] + arguments,
            environment: cleanEnvironment(SiwaProcess.unboundListeners.merging(environment) { $1 }),
            directory: directory.path
        )
        let stdout = String(decoding: out, as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: out) as? [String: Any], "\(stdout)")
        let list = try #require(object["findings"] as? [[String: Any]])
        return (
            status, list.map { ($0["setting"] as! String, $0["ok"] as! Bool, $0["message"] as! String) }, stdout
        )
    }

    /// The values the issue found doctor calling right while serve refused them: both now refuse them, naming the
    /// variable, whether they come from the environment, a JSON file or a YAML file.
    @Test(arguments: [
        ("SIWA_CLOCK_LEEWAY", "clockLeeway", "999"), ("SIWA_COMPAT", "compat", "servicestak"),
        ("SIWA_PORT", "port", "80x"), ("SIWA_RATE_LIMIT", "rateLimit", "ten"),
        ("SIWA_ACCESS_TOKEN_LIFETIME", "accessTokenLifetime", "-5"),
        ("SIWA_ACCOUNT_DELETION_MODE", "accountDeletionMode", "purge"), ("SIWA_LOG_LEVEL", "log.level", "loud"),
        ("SIWA_METRICS_PORT", "metrics.port", "8080"),
        ("SIWA_ADMIN_ALLOWED_NETWORKS", "admin.allowedNetworks", "10.0.0.0/33"),
    ])
    func doctorAndServeRefuseTheSameValues(variable: String, key: String, value: String) async throws {
        // The ports as the file gives them (an empty variable is unset): two of the values are ports.
        let base = [
            "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_DATA_KEY_FILE": directory.path + "/k", "SIWA_PORT": "",
            "SIWA_METRICS_PORT": "",
        ]
        let fromEnvironment = try await doctor([], base.merging([variable: value]) { $1 })
        #expect(fromEnvironment.status == 1, "\(fromEnvironment.stdout)")
        #expect(fromEnvironment.findings.contains { $0.setting == variable && !$0.ok })

        let path = key.split(separator: ".").map(String.init)
        let nested = path.count == 2 ? #"{"\#(path[0])": {"\#(path[1])": "\#(value)"}}"# : #"{"\#(key)": "\#(value)"}"#
        let json = try folder.write("siwa.json", nested)
        let fromJSON = try await doctor(["--config", json], base)
        #expect(fromJSON.status == 1, "\(fromJSON.stdout)")
        #expect(fromJSON.findings.contains { $0.setting == variable && !$0.ok }, "\(fromJSON.stdout)")

        let yamlText = path.count == 2 ? "\(path[0]):\n  \(path[1]): \"\(value)\"\n" : "\(key): \"\(value)\"\n"
        let yaml = try folder.write("siwa.yaml", yamlText)
        let fromYAML = try await doctor(["--config", yaml], base)
        #expect(fromYAML.status == 1, "\(fromYAML.stdout)")
        #expect(fromYAML.findings.contains { $0.setting == variable && !$0.ok }, "\(fromYAML.stdout)")

        // serve itself, on the JSON file: refused before anything is created.
        let (status, _, errors) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["serve", "--config", json],
            environment: cleanEnvironment(base.merging(["SIWA_DATABASE_PATH": directory.path + "/s.sqlite"]) { $1 }),
            directory: directory.path
        )
        #expect(status == 2)
        #expect(String(decoding: errors, as: UTF8.self).contains(variable))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/s.sqlite"))
    }

    @Test func doctorExitStatusTellsRefusalFromWarning() async throws {
        // Serve would start (a client id), but without the team's key it cannot exchange codes: a warning, 3.
        let warning = try await doctor([], ["SIWA_BUNDLE_IDS": "com.example.app"])
        #expect(warning.status == 3, "\(warning.stdout)")
        #expect(warning.findings.contains { $0.setting == "siwa serve" && $0.ok })
        // No client id at all: serve refuses, 1.
        let refusal = try await doctor([], [:])
        #expect(refusal.status == 1)
        // An unreadable configuration file: 2.
        let unreadable = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["doctor", "--config", directory.path + "/missing.json"],
            environment: cleanEnvironment(),
            directory: directory.path
        )
        #expect(unreadable.status == 2)
    }

    /// A JSON file with nested keys and arrays; the environment overrides it; `.env` sits between them; a key that is
    /// no setting is named.
    @Test func aJSONFileTheEnvironmentAndDotEnvLayerInOrder() async throws {
        let json = try folder.write(
            "siwa.json",
            """
            {"publicURL": "https://file.example.com", "bundleIDs": ["com.example.app", "com.example.app.watch"],
             "servicesID": "com.example.web", "web": {"stateLifetime": 900}, "ratelimit": 5}
            """
        )
        _ = try folder.write(".env", "SIWA_PUBLIC_URL=https://dotenv.example.com\n")
        let layered = try await doctor(["--config", json], [:])
        #expect(layered.findings.contains { $0.message.contains("https://dotenv.example.com/auth/apple/callback") })
        #expect(!layered.findings.contains { $0.message.contains("file.example.com") })
        #expect(layered.findings.contains { $0.setting == "ratelimit" && !$0.ok && $0.message.contains("no setting") })

        let overridden = try await doctor(["--config", json], ["SIWA_PUBLIC_URL": "https://env.example.com"])
        #expect(overridden.findings.contains { $0.message.contains("https://env.example.com/auth/apple/callback") })
    }

    /// `<VARIABLE>_FILE` reads a secret from a file, as container secrets are mounted; doctor never prints it.
    @Test func secretFilesAreReadAndNeverPrinted() async throws {
        let key = P256.Signing.PrivateKey()
        let base64 = Data(key.pemRepresentation.utf8).base64EncodedString()
        let secret = try folder.write("apple-key.b64", base64 + "\n")
        let result = try await doctor(
            [],
            [
                "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_TEAM_ID": "ABCDE12345", "SIWA_KEY_ID": "KEY1234567",
                "SIWA_PRIVATE_KEY_BASE64_FILE": secret,
            ]
        )
        #expect(result.findings.contains { $0.setting == "siwa serve" && $0.ok }, "\(result.stdout)")
        #expect(result.findings.contains { $0.setting == "SIWA_PRIVATE_KEY_BASE64" && $0.message.contains("_FILE") })
        #expect(!result.stdout.contains(String(base64.prefix(24))))

        // Both the value and its file: refused, since which one wins would be a guess.
        let (status, _, errors) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["doctor"],
            environment: cleanEnvironment([
                "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_PRIVATE_KEY_BASE64": base64,
                "SIWA_PRIVATE_KEY_BASE64_FILE": secret,
            ]),
            directory: directory.path
        )
        #expect(status == 2)
        #expect(String(decoding: errors, as: UTF8.self).contains("set the value or the file, not both"))
    }

    /// `docs/configuration.md` is what `siwa doctor --reference` prints, and every `SIWA_*` variable the commands'
    /// code names is a declared setting (or its `_FILE`, or `SIWA_CONFIG`): a setting read or advised without a
    /// declaration fails here.
    @Test func theReferenceIsGeneratedFromTheCode() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let committed = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let printed = try await SiwaProcess.run(["doctor", "--reference"])
        #expect(printed.status == 0)
        #expect(
            printed.stdout == committed,
            "docs/configuration.md is stale: regenerate it with `.build/debug/siwa doctor --reference > docs/configuration.md`"
        )
        let sources = root.appendingPathComponent("Sources/SiwaCLI")
        var used: Set<String> = []
        for case let file as URL in FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            used.formUnion(text.matches(of: /SIWA_[A-Z0-9_]*[A-Z0-9]/).map { String($0.output) })
        }
        #expect(used.count > 40)
        for variable in used where variable != "SIWA_CONFIG" {
            let declared =
                variable.hasSuffix("_FILE") && SettingsCatalog.byVariable[variable] == nil
                ? String(variable.dropLast(5)) : variable
            #expect(SettingsCatalog.byVariable[declared] != nil, "\(variable) is named but not declared")
            #expect(committed.contains("`\(declared)`"), "\(declared) is not in the reference")
        }
    }

    /// `serve --config` with a JSON file, `SIWA_LOG_LEVEL=debug` and `SIWA_LOG_FORMAT=json`: it listens where the
    /// file says, writes JSON lines, and logs each request with its path (at debug) and the id it answered.
    @Test func serveReadsTheFileAndLogsJSONAtTheLevelAsked() async throws {
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        let json = try folder.write(
            "siwa.json",
            """
            {"port": \(port), "bundleIDs": ["com.example.app"], "database": {"path": "served.sqlite"},
             "log": {"level": "debug", "format": "json"}, "metrics": {"port": 0}}
            """
        )
        let log = directory.appendingPathComponent("serve.log").path
        let server = try ChildProcess(
            SiwaProcess.executable.path,
            arguments: ["serve", "--config", json],
            environment: cleanEnvironment(),
            directory: directory.path,
            stdout: log,
            stderr: log
        )
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(
            try await SiwaProcess.waitUntilServing(port: port),
            "siwa serve did not come up on the file's port"
        )
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("served.sqlite").path))
        server.terminate(signal: SIGTERM)
        _ = server.waitForExit()
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["level"] is String && object?["message"] is String, "not a JSON log line: \(line)")
        }
        let access = lines.filter { $0.contains(#""message":"request""#) && $0.contains(#""route":"/healthz""#) }
        #expect(!access.isEmpty, "no access line")
        #expect(access.allSatisfy { $0.contains(#""path":"/healthz""#) && $0.contains(#""request_id":""#) })
    }

    /// Run in the folder where `siwa demo` ran, with no setting at all, `siwa users list` lists the demo's users;
    /// `--database` chooses another; a database that does not exist is named, not created empty.
    @Test func operatorCommandsFindTheDemoDatabaseAndNeedNoAppleSettings() async throws {
        let store = try await SQLAccountStore.sqlite(
            path: directory.appendingPathComponent("siwa-demo.sqlite").path,
            logger: Logger(label: "test")
        )
        _ = try await store.signIn(
            AppleSignInFacts(
                appleUserID: AppleUserID("001111.demo.2222"),
                clientID: "com.example.siwa.demo",
                email: "demo@example.com",
                emailVerified: true,
                isPrivateEmail: false,
                givenName: "Demo",
                familyName: nil
            ),
            now: Date()
        )
        await store.shutdown()

        let (status, out, errors) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["users", "list"],
            environment: cleanEnvironment(),
            directory: directory.path
        )
        #expect(status == 0, "\(String(decoding: errors, as: UTF8.self))")
        #expect(String(decoding: out, as: UTF8.self).contains("demo@example.com"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("siwa.sqlite").path))

        let elsewhere = directory.appendingPathComponent("nothing-here.sqlite").path
        let (missing, _, missingErrors) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["users", "list", "--database", elsewhere],
            environment: cleanEnvironment(),
            directory: directory.path
        )
        #expect(missing == 2)
        #expect(String(decoding: missingErrors, as: UTF8.self).contains("no database at \(elsewhere)"))
        #expect(!FileManager.default.fileExists(atPath: elsewhere))

        let explicit = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["users", "show", "001111.demo.2222", "--database", "siwa-demo.sqlite"],
            environment: cleanEnvironment(),
            directory: directory.path
        )
        #expect(explicit.status == 0)
        #expect(String(decoding: explicit.stdout, as: UTF8.self).contains("demo@example.com"))
    }

    /// `siwa oidc new-client` prints a secret once and an entry that holds only its SHA-256; `SIWA_OIDC_CLIENTS` takes
    /// the entry from the environment, a `_FILE` file and a JSON configuration file's array; a bad entry is refused
    /// naming the variable, as serve would.
    @Test func openIDClientsFromNewClientAreReadFromEveryPlaceAndBadOnesRefused() async throws {
        let made = try await SiwaProcess.run([
            "oidc", "new-client", "--id", "grafana", "--redirect-uri",
            "https://grafana.example.com/login/generic_oauth",
            "--post-logout-redirect-uri", "https://grafana.example.com/login",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let lines = made.stdout.split(separator: "\n").map(String.init)
        let secret = try #require(lines.first { $0.hasPrefix("client_secret: ") }?.dropFirst("client_secret: ".count))
        #expect(secret.count == 43, "256 random bits, base64url")
        let entry = try #require(lines.last)
        #expect(!entry.contains(secret))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(entry.utf8)) as? [String: Any])
        let hash = SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(object["secretSHA256"] as? String == hash)
        #expect(object["redirectURIs"] as? [String] == ["https://grafana.example.com/login/generic_oauth"])

        let base = [
            "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_SERVICES_ID": "com.example.web",
            "SIWA_DATA_KEY_FILE": directory.path + "/k",
        ]
        func accepted(
            _ result: (status: Int32, findings: [(setting: String, ok: Bool, message: String)], stdout: String)
        ) {
            #expect(result.status == 3, "only the warning about Apple's key: \(result.stdout)")
            #expect(
                result.findings.contains {
                    $0.setting == "SIWA_OIDC_CLIENTS" && $0.ok && $0.message.contains("grafana")
                },
                "\(result.stdout)"
            )
        }
        accepted(try await doctor([], base.merging(["SIWA_OIDC_CLIENTS": "[\(entry)]"]) { $1 }))
        let app = try await SiwaProcess.run([
            "oidc", "new-client", "--id", "notes-app", "--public", "--name", "Example Notes",
            "--redirect-uri", "com.example.notes:/callback",
        ])
        #expect(app.status == 0, "\(app.stderr)")
        #expect(app.stdout.contains("consent page"), "says that users allow a public client: \(app.stdout)")
        let appEntry = try #require(app.stdout.split(separator: "\n").last.map(String.init))
        #expect(appEntry.contains(#""name":"Example Notes""#) && appEntry.contains(#""public":true"#))
        let both = try await doctor([], base.merging(["SIWA_OIDC_CLIENTS": "[\(entry),\(appEntry)]"]) { $1 })
        #expect(both.status == 3, "\(both.stdout)")
        #expect(both.findings.contains { $0.setting == "SIWA_OIDC_CLIENTS" && $0.ok }, "\(both.stdout)")
        let file = try folder.write("oidc-clients.json", "[\(entry)]\n")
        accepted(try await doctor([], base.merging(["SIWA_OIDC_CLIENTS_FILE": file]) { $1 }))
        let config = try folder.write(
            "siwa.json",
            #"{"publicURL": "https://file.example.com", "web": {"stateLifetime": 900}, "bundleIDs": ["com.example.app"], "oidc": {"clients": [\#(entry)]}}"#
        )
        let fromConfig = try await doctor(["--config", config], base)
        accepted(fromConfig)
        #expect(
            fromConfig.findings.contains { $0.message.contains("https://file.example.com/auth/apple/callback") },
            "the file's other settings are read too: \(fromConfig.stdout)"
        )

        let withoutWeb = try await doctor(
            [],
            base.merging(["SIWA_OIDC_CLIENTS": "[\(entry)]", "SIWA_SERVICES_ID": ""]) { $1 }
        )
        #expect(
            withoutWeb.findings.contains {
                $0.setting == "SIWA_OIDC_CLIENTS" && !$0.ok && $0.message.contains("Services ID")
            },
            "relying parties need the web sign-in: \(withoutWeb.stdout)"
        )

        for bad in [
            "not json", #"[{"id": "x", "redirectURIs": ["https://x.example.com/cb"]}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["http://x.example.com/cb"]}]"#,
            #"[{"id": "x y", "public": true, "redirectURIs": ["https://x.example.com/cb"]}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["https://x.example.com/cb"], "colour": "red"}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["https://x.example.com/cb"], "scopes": ["admin"]}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["https://x.example.com/cb"], "name": ""}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["https://x.example.com/cb"], "name": "a\nb"}]"#,
            #"[{"id": "x", "public": true, "redirectURIs": ["https://x.example.com/cb"], "name": 7}]"#,
        ] {
            let refused = try await doctor([], base.merging(["SIWA_OIDC_CLIENTS": bad]) { $1 })
            #expect(refused.status == 1, "\(bad): \(refused.stdout)")
            #expect(refused.findings.contains { $0.setting == "SIWA_OIDC_CLIENTS" && !$0.ok }, "\(bad)")
        }
    }
}
