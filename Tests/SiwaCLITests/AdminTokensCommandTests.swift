import AccountStore
import AccountStoreSQL
import AuthServer
import Foundation
import SiwaTesting
import Testing

/// `siwa admin tokens create|list|revoke` as subprocesses on a SQLite file.
@Suite("siwa admin tokens")
struct AdminTokensCommandTests {
    let folder: TemporaryFolder
    let environment: [String: String]
    var databasePath: String { environment["SIWA_DATABASE_PATH"]! }

    init() throws {
        folder = try TemporaryFolder("siwa-admin-tokens")
        environment = [
            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
            "SIWA_DATA_KEY_FILE": folder.url.appendingPathComponent("data.key").path,
            "SIWA_BUNDLE_IDS": "com.example.app",
        ]
    }

    private func siwa(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try await SiwaProcess.run(arguments, environment: environment)
        return (result.status, result.stdout, result.stderr)
    }

    @Test func createPrintsTheTokenOnceAndStoresOnlyItsHash() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let created = try await siwa(["admin", "tokens", "create", "--name", "nightly-report", "--scope", "read"])
        #expect(created.status == 0, "\(created.stderr)")
        let secret = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("siwa_at_"), "\(created.stdout)")
        #expect(!secret.contains("\n"), "the token alone on standard output")
        #expect(created.stderr.contains("nightly-report"))

        try await withSQLiteStore(at: databasePath) { store in
            let token = try #require(try await store.adminToken(tokenHash: ServiceTokens.hash(secret)))
            #expect(token.name == "nightly-report")
            #expect(token.scope == .read)
            #expect(token.createdBy == .operator)
            let days = token.expiresAt.timeIntervalSince(token.createdAt) / 86_400
            #expect(days == Double(ServiceTokens.defaultLifetimeDays))
        }
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
            let file = try Data(contentsOf: URL(fileURLWithPath: databasePath + suffix))
            #expect(file.range(of: Data(secret.utf8)) == nil, "the secret is not in the database\(suffix)")
        }

        let listed = try await siwa(["admin", "tokens", "list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("nightly-report  read  active"), "\(listed.stdout)")
        #expect(!listed.stdout.contains(secret) && !listed.stdout.contains("siwa_at_"), "list never shows a token")
    }

    @Test func createRefusesADuplicateNameAndBadValues() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let first = try await siwa(["admin", "tokens", "create", "--name", "ops-bot", "--scope", "write"])
        #expect(first.status == 0, "\(first.stderr)")
        let again = try await siwa(["admin", "tokens", "create", "--name", "ops-bot", "--scope", "read"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists"), "\(again.stderr)")
        let badScope = try await siwa(["admin", "tokens", "create", "--name", "x", "--scope", "admin"])
        #expect(badScope.status != 0)
        let tooLong = try await siwa([
            "admin", "tokens", "create", "--name", "y", "--scope", "read", "--expires-in", "400",
        ])
        #expect(tooLong.status == 1)
        #expect(tooLong.stderr.contains("365"), "\(tooLong.stderr)")
        let badName = try await siwa(["admin", "tokens", "create", "--name", "has space", "--scope", "read"])
        #expect(badName.status == 1)
    }

    @Test func revokeEndsATokenAndListShowsIt() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let created = try await siwa(
            ["admin", "tokens", "create", "--name", "leaked", "--scope", "write", "--expires-in", "7"]
        )
        #expect(created.status == 0, "\(created.stderr)")
        let secret = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let revoked = try await siwa(["admin", "tokens", "revoke", "leaked"])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(revoked.stdout.contains("revoked service token 'leaked'"))
        let twice = try await siwa(["admin", "tokens", "revoke", "leaked"])
        #expect(twice.status == 1)

        #expect(try await siwa(["admin", "tokens", "list"]).stdout.contains("no active service token"))
        let all = try await siwa(["admin", "tokens", "list", "--all"])
        #expect(all.stdout.contains("leaked  write  revoked"), "\(all.stdout)")

        try await withSQLiteStore(at: databasePath) { store in
            let token = try #require(try await store.adminToken(tokenHash: ServiceTokens.hash(secret)))
            #expect(token.revokedAt != nil)
            let events = try await store.auditEvents(
                AuditEventFilter(types: [.adminTokenCreated, .adminTokenRevoked]),
                limit: 10,
                after: nil
            ).items
            #expect(Set(events.map(\.type)) == [.adminTokenCreated, .adminTokenRevoked])
            #expect(events.allSatisfy { $0.actor == .operator && $0.details["token"] == "leaked" })
        }
    }
}
