import AccountStoreSQL
import Crypto
import CryptoExtras
import Foundation
import Logging
import SiwaTesting
import Testing

/// `siwa doctor` as a subprocess on a good and a broken configuration.
@Suite("siwa doctor")
struct DoctorCommandTests {
    let folder = try! TemporaryFolder("siwa-doctor")
    var directory: URL { folder.url }

    private func findings(_ json: String) throws -> [(setting: String, ok: Bool, message: String)] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let list = try #require(object["findings"] as? [[String: Any]])
        return list.map { ($0["setting"] as! String, $0["ok"] as! Bool, $0["message"] as! String) }
    }

    /// The doctor's one finding about `setting` (besides the schema's), with the JSON's optional `note` flag, from `doctor --json`.
    private func databaseFinding(
        _ setting: String,
        _ environment: [String: String]
    ) async throws -> (ok: Bool, message: String, note: Bool) {
        let result = try await SiwaProcess.run(
            ["doctor", "--json"],
            environment: ["SIWA_DATABASE_URL": "", "SIWA_DATABASE_PATH": ""].merging(environment) { $1 }
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let list = try #require(object["findings"] as? [[String: Any]])
        // The schema's version is a finding of its own, under the same setting.
        let matching = list.filter {
            $0["setting"] as? String == setting && ($0["message"] as? String)?.hasPrefix("the schema") != true
        }
        try #require(matching.count == 1, "one \(setting) finding in \(result.stdout)")
        return (
            try #require(matching[0]["ok"] as? Bool),
            try #require(matching[0]["message"] as? String),
            matching[0]["note"] as? Bool ?? false
        )
    }

    /// A configuration file with every setting right, and `database` for its database lines.
    private func goodConfiguration(database: String) throws -> String {
        let key = try folder.write("AuthKey_ABCDE12345.p8", P256.Signing.PrivateKey().pemRepresentation)
        return try folder.write(
            "good.env",
            """
            # production settings
            SIWA_TEAM_ID=TEAM123456
            SIWA_KEY_ID=ABCDE12345
            export SIWA_PRIVATE_KEY_FILE="\(key)"
            SIWA_BUNDLE_IDS=com.example.app, com.example.app.watch
            SIWA_SERVICES_ID=com.example.web
            SIWA_PUBLIC_URL=https://auth.example.com
            \(database)
            SIWA_DATA_KEY=\(Data(repeating: 7, count: 32).base64EncodedString())
            """
        )
    }

    @Test func goodConfigurationPasses() async throws {
        let database = directory.appendingPathComponent("siwa.sqlite").path
        try await SQLAccountStore.sqlite(path: database, logger: Logger(label: "test")).shutdown()
        let config = try goodConfiguration(database: "SIWA_DATABASE_PATH=\(database)")
        let result = try await SiwaProcess.run(["doctor", "--config", config], environment: ["SIWA_DATABASE_URL": ""])
        #expect(result.status == 0)
        #expect(result.stdout.contains("✓ SIWA_DATABASE_PATH: SQLite: \(database) opens and answers"))
        #expect(!result.stdout.contains("✗"))
        #expect(
            result.stdout.contains(
                "register https://auth.example.com/auth/apple/callback as a Return URL of com.example.web"
            )
        )
        // Everything the developer portal needs, the notification endpoint and the domain included.
        #expect(
            result.stdout.contains(
                "Server-to-Server Notification Endpoint https://auth.example.com/auth/apple/notifications"
            ),
            "\(result.stdout)"
        )
        #expect(result.stdout.contains("Domains and Subdomains auth.example.com"), "\(result.stdout)")
        #expect(result.stdout.contains("configuration looks right"))
    }

    @Test func brokenConfigurationNamesEveryProblem() async throws {
        let rsaKey = try folder.write(
            "AuthKey_ABCDE12345.p8",
            try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation
        )
        let config = try folder.write(
            "broken.env",
            """
            SIWA_TEAM_ID=TEAM12345
            SIWA_KEY_ID=ZZZZZ99999
            SIWA_PRIVATE_KEY_FILE=\(rsaKey)
            SIWA_BUNDLE_IDS=com.example.app
            SIWA_SERVICES_ID=com.example.app
            SIWA_PUBLIC_URL=http://localhost:8080
            SIWA_DATA_KEY=short
            SIWA_APPLE_BASE_URL=http://apple.example.com
            """
        )
        let result = try await SiwaProcess.run(["doctor", "--config", config, "--json"])
        #expect(result.status == 1)
        let problems = try findings(result.stdout).filter { !$0.ok }
        func problem(_ setting: String, _ text: String) -> Bool {
            problems.contains { $0.setting == setting && $0.message.contains(text) }
        }
        #expect(problem("SIWA_TEAM_ID", "10 upper-case letters or digits (got 9 characters)"))
        #expect(problem("SIWA_KEY_ID", "AuthKey_ABCDE12345.p8 but SIWA_KEY_ID is ZZZZZ99999"))
        #expect(problem("SIWA_PRIVATE_KEY_FILE", "RSA key"))
        #expect(problem("SIWA_SERVICES_ID", "equals a bundle id"))
        #expect(problem("SIWA_PUBLIC_URL", "not localhost or an IP address"))
        #expect(problem("SIWA_DATA_KEY", "32 random bytes"))
        #expect(problem("SIWA_APPLE_BASE_URL", "use https"))
    }

    @Test func missingSettingsAreNamed() async throws {
        let config = try folder.write("empty.env", "SIWA_PUBLIC_URL=https://auth.example.com\n")
        let result = try await SiwaProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        // Without the team's key serve starts but cannot exchange codes (a warning, !); without a client id it stops.
        for setting in ["SIWA_TEAM_ID", "SIWA_KEY_ID", "SIWA_PRIVATE_KEY_FILE"] {
            #expect(result.stdout.contains("! \(setting): missing"), "\(result.stdout)")
        }
        #expect(result.stdout.contains("✗ SIWA_BUNDLE_IDS: no client id"), "\(result.stdout)")
        #expect(result.stdout.contains("siwa serve would refuse to start"), "\(result.stdout)")
    }

    @Test func unreachablePostgreSQLIsReported() async throws {
        let finding = try await databaseFinding(
            "SIWA_DATABASE_URL",
            ["SIWA_DATABASE_URL": "postgres://siwa:hunter2@127.0.0.1:1/siwa?sslmode=disable"]
        )
        #expect(!finding.ok)
        #expect(finding.message.contains("127.0.0.1:1"))
        #expect(finding.message.contains("connection refused"))
        #expect(!finding.message.contains("hunter2"))
    }

    @Test func missingSQLiteFileIsANoteAndIsNotCreated() async throws {
        let path = directory.appendingPathComponent("not-yet.sqlite").path
        let finding = try await databaseFinding("SIWA_DATABASE_PATH", ["SIWA_DATABASE_PATH": path])
        #expect(finding.ok)
        #expect(finding.note)
        #expect(finding.message.contains("the SQLite file does not exist yet; `siwa migrate` creates it"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func sqliteFileInAMissingDirectoryIsAProblem() async throws {
        let path = directory.appendingPathComponent("absent/siwa.sqlite").path
        let finding = try await databaseFinding("SIWA_DATABASE_PATH", ["SIWA_DATABASE_PATH": path])
        #expect(!finding.ok)
        #expect(finding.message.contains("does not exist"))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func fileThatIsNotSQLiteIsAProblem() async throws {
        let path = try folder.write(
            "text.sqlite",
            "not a database, just some text that is long enough to have a header"
        )
        let finding = try await databaseFinding("SIWA_DATABASE_PATH", ["SIWA_DATABASE_PATH": path])
        #expect(!finding.ok)
        #expect(finding.message.contains("is not a SQLite database"))
    }

    /// Against the private server of `scripts/with-postgres` (`SIWA_TEST_POSTGRES_URL`), whose `max_connections` is
    /// 300: a pool that fits is a note of how many instances fit, one larger than the server allows is a problem.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil))
    func thePoolSizeIsComparedWithPostgreSQLsLimit() async throws {
        let url = ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]!
        let fits = try await databaseFinding("SIWA_DATABASE_MAX_CONNECTIONS", ["SIWA_DATABASE_URL": url])
        #expect(fits.ok, "\(fits.message)")
        #expect(fits.message.contains("up to 17 connections per instance (16 pooled, 1 listening)"), "\(fits.message)")
        #expect(fits.message.contains("max_connections 300"), "\(fits.message)")

        let tooMany = try await databaseFinding(
            "SIWA_DATABASE_MAX_CONNECTIONS",
            ["SIWA_DATABASE_URL": url, "SIWA_DATABASE_MAX_CONNECTIONS": "400"]
        )
        #expect(!tooMany.ok)
        #expect(
            tooMany.message.contains("each instance may open 401 connections (400 pooled, 1 listening)"),
            "\(tooMany.message)"
        )
        #expect(tooMany.message.contains("max_connections 300"), "\(tooMany.message)")
        #expect(!tooMany.message.contains(URLComponents(string: url)?.password ?? "\u{0}"))
    }

    /// A pool larger than PostgreSQL allows is the one problem of an otherwise right configuration: doctor exits 3
    /// (serve would start, a finding needs attention); a pool that fits leaves it at 0.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil))
    func aPoolTooLargeForPostgreSQLNeedsAttention() async throws {
        let url = ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]!
        let config = try goodConfiguration(database: "SIWA_DATABASE_URL=\(url)")
        let tooLarge = try await SiwaProcess.run(
            ["doctor", "--config", config],
            environment: ["SIWA_DATABASE_URL": "", "SIWA_DATABASE_PATH": "", "SIWA_DATABASE_MAX_CONNECTIONS": "400"]
        )
        #expect(tooLarge.status == 3, "\(tooLarge.stdout)")
        #expect(
            tooLarge.stdout.contains(
                "! SIWA_DATABASE_MAX_CONNECTIONS: each instance may open 401 connections (400 pooled, 1 listening)"
            ),
            "a warning: \(tooLarge.stdout)"
        )
        #expect(tooLarge.stdout.contains("siwa serve would start and log 1 warning(s)"))

        let fits = try await SiwaProcess.run(
            ["doctor", "--config", config],
            environment: ["SIWA_DATABASE_URL": "", "SIWA_DATABASE_PATH": "", "SIWA_DATABASE_MAX_CONNECTIONS": "16"]
        )
        #expect(fits.status == 0, "\(fits.stdout)")
        #expect(
            fits.stdout.contains(
                "✓ SIWA_DATABASE_MAX_CONNECTIONS: up to 17 connections per instance (16 pooled, 1 listening)"
            )
        )
    }

    /// Against the private server of `scripts/with-postgres` (`SIWA_TEST_POSTGRES_URL`).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil))
    func postgreSQLLoginProblemsAreNamed() async throws {
        let url = try #require(URLComponents(string: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]!))
        let good = try await databaseFinding("SIWA_DATABASE_URL", ["SIWA_DATABASE_URL": try #require(url.string)])
        #expect(good.ok, "\(good.message)")

        var wrongPassword = url
        wrongPassword.password = "wrong-password"
        let refused = try await databaseFinding(
            "SIWA_DATABASE_URL",
            ["SIWA_DATABASE_URL": try #require(wrongPassword.string)]
        )
        #expect(!refused.ok)
        #expect(refused.message.contains("refused the password of user \(url.user ?? "")"))
        #expect(!refused.message.contains("wrong-password"))

        var missingDatabase = url
        missingDatabase.path = "/no_such_database"
        let missing = try await databaseFinding(
            "SIWA_DATABASE_URL",
            ["SIWA_DATABASE_URL": try #require(missingDatabase.string)]
        )
        #expect(!missing.ok)
        #expect(missing.message.contains("the database no_such_database does not exist"))
    }
}
