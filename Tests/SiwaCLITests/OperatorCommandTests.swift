import AccountStore
import AccountStoreSQL
import AppleSignIn
import Foundation
import Logging
import SiwaTesting
import Testing

/// `siwa migrate`, `siwa keys rotate` and `siwa users` as subprocesses on a SQLite file.
@Suite("siwa migrate, keys, users")
struct OperatorCommandTests {
    let folder: TemporaryFolder
    let environment: [String: String]

    init() throws {
        folder = try TemporaryFolder("siwa-ops")
        environment = [
            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
            "SIWA_DATA_KEY_FILE": folder.url.appendingPathComponent("data.key").path,
            "SIWA_BUNDLE_IDS": "com.example.app",
        ]
    }

    @Test func migrateCreatesTheDatabase() async throws {
        let result = try await SiwaProcess.run(["migrate"], environment: environment)
        #expect(result.status == 0)
        #expect(
            result.stdout.contains("created the schema, version \(SQLAccountStore.schemaVersion)"),
            "\(result.stdout)"
        )
        let again = try await SiwaProcess.run(["migrate"], environment: environment)
        #expect(again.stdout.contains("the schema is current"), "\(again.stdout)")
        #expect(FileManager.default.fileExists(atPath: environment["SIWA_DATABASE_PATH"]!))
        let broken = try await SiwaProcess.run(
            ["migrate"],
            environment: environment.merging(["SIWA_PORT": "http"]) { $1 }
        )
        #expect(broken.status == 2)
        #expect(broken.stderr.contains("SIWA_PORT"))
    }

    /// Two instances starting on one new folder at the same moment (a deployment restarting both) both come up, on
    /// one schema and one data key.
    @Test func twoProcessesMigratingOneNewFileAtOnceBothSucceed() async throws {
        async let first = SiwaProcess.run(["migrate"], environment: environment)
        async let second = SiwaProcess.run(["migrate"], environment: environment)
        let results = try await [first, second]
        for result in results { #expect(result.status == 0, "stderr: \(result.stderr)") }
        let again = try await SiwaProcess.run(["keys", "rotate"], environment: environment)
        #expect(again.status == 0, "the data key both used unseals the stored signing key: \(again.stderr)")
    }

    @Test func keysRotateAddsAKeyEachTime() async throws {
        #expect(try await SiwaProcess.run(["migrate"], environment: environment).status == 0)
        let first = try await SiwaProcess.run(["keys", "rotate"], environment: environment)
        #expect(first.status == 0)
        #expect(first.stdout.contains("(2 key(s) stored)"))  // the first key, then the rotated one
        let second = try await SiwaProcess.run(["keys", "rotate"], environment: environment)
        #expect(second.stdout.contains("(3 key(s) stored)"))
        let third = try await SiwaProcess.run(["keys", "rotate", "--json"], environment: environment)
        let answer = try JSONSerialization.jsonObject(with: Data(third.stdout.utf8)) as? [String: Any]
        #expect(answer?["storedKeys"] as? Int == 4)
        #expect((answer?["currentKey"] as? String)?.isEmpty == false)
        let migrate = try await SiwaProcess.run(["migrate", "--json"], environment: environment)
        let migrated = try JSONSerialization.jsonObject(with: Data(migrate.stdout.utf8)) as? [String: Any]
        #expect(migrated?["schema"] as? String == "current")
        #expect((migrated?["migrations"] as? [Any])?.isEmpty == true, "nothing applied")
    }

    @Test func usersListAndShow() async throws {
        let store = try await SQLAccountStore.sqlite(
            path: environment["SIWA_DATABASE_PATH"]!,
            logger: Logger(label: "test")
        )
        let outcome = try await store.signIn(
            AppleSignInFacts(
                appleUserID: AppleUserID("001111.aaaa.2222"),
                clientID: "com.example.app",
                email: "ops@example.com",
                emailVerified: true,
                isPrivateEmail: false,
                givenName: "Ops",
                familyName: "Person"
            ),
            now: Date()
        )
        await store.shutdown()

        let list = try await SiwaProcess.run(["users", "list", "--json"], environment: environment)
        #expect(list.status == 0)
        let users = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(users.count == 1)
        #expect(users.first?["id"] as? String == outcome.user.id.description)
        #expect(users.first?["displayName"] as? String == "Ops Person")

        let byApple = try await SiwaProcess.run(["users", "show", "001111.aaaa.2222"], environment: environment)
        #expect(byApple.status == 0)
        #expect(byApple.stdout.contains("ops@example.com"))
        let byID = try await SiwaProcess.run(["users", "show", outcome.user.id.description], environment: environment)
        #expect(byID.stdout.contains("\"givenName\":\"Ops\""))
        let missing = try await SiwaProcess.run(["users", "show", "nobody"], environment: environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no account nobody"))
    }

    /// An email finds every account with it, ignoring case: one JSON object per line, oldest first.
    @Test func usersShowFindsEveryAccountWithAnEmail() async throws {
        let first = try await signIn("001111.one.2222", email: "Twin@example.com")
        let second = try await signIn("001111.two.2222", email: "twin@example.com")
        _ = try await signIn("001111.three.2222", email: "other@example.com")

        let both = try await SiwaProcess.run(["users", "show", "TWIN@example.com"], environment: environment)
        #expect(both.status == 0, "\(both.stderr)")
        let lines = both.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(both.stdout)")
        let objects = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["id"] as? String } == [first.id.description, second.id.description])
        #expect(objects.allSatisfy { $0["status"] as? String == "active" })

        let one = try await SiwaProcess.run(["users", "show", "other@example.com"], environment: environment)
        // The Apple user id, as the console and the admin API show it.
        #expect(one.stdout.contains("\"appleUserID\":\"001111.three.2222\""), "\(one.stdout)")
        #expect(one.stdout.split(separator: "\n").count == 1)
        let none = try await SiwaProcess.run(["users", "show", "nobody@example.com"], environment: environment)
        #expect(none.status == 1)
        #expect(none.stderr.contains("no account nobody@example.com"))
    }

    /// Disable ends the sessions and marks the account (list and show say so); enable lets it sign in again.
    @Test func grantAndRevokeAdminByIdOrSubNeverByEmail() async throws {
        let user = try await signIn("001111.adm.2222", email: "adm@example.com")
        let byEmail = try await SiwaProcess.run(["users", "grant-admin", "adm@example.com"], environment: environment)
        #expect(byEmail.status == 1)
        #expect(byEmail.stderr.contains("looks like an email"), "\(byEmail.stderr)")

        let granted = try await SiwaProcess.run(
            ["users", "grant-admin", user.id.description],
            environment: environment
        )
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(granted.stdout.contains("granted the admin role to \(user.id)"))
        let again = try await SiwaProcess.run(["users", "grant-admin", user.id.description], environment: environment)
        #expect(again.stdout.contains("holds the admin role already"))
        let bySub = try await SiwaProcess.run(
            ["users", "grant-admin", "001999.not-yet.0000"],
            environment: environment
        )
        #expect(bySub.status == 0)
        #expect(bySub.stderr.contains("no account has 001999.not-yet.0000 yet"))
        let listed = try await SiwaProcess.run(["users", "admins"], environment: environment)
        #expect(listed.stdout.contains(user.id.description) && listed.stdout.contains("by operator"))

        let (isAdmin, events) = try await withStore { store in
            (
                try await store.isAdmin(AdminSubject(user.id)),
                try await store.auditEvents(AuditEventFilter(types: [.adminGranted]), limit: 10, after: nil).items
            )
        }
        #expect(isAdmin)
        #expect(events.count == 2, "each grant is in the audit log")
        #expect(events.allSatisfy { $0.actor == .operator })

        let revoked = try await SiwaProcess.run(
            ["users", "revoke-admin", user.id.description],
            environment: environment
        )
        #expect(revoked.status == 0, "\(revoked.stderr)")
        let twice = try await SiwaProcess.run(["users", "revoke-admin", user.id.description], environment: environment)
        #expect(twice.status == 1)
        #expect(try await withStore { try await $0.isAdmin(AdminSubject(user.id)) } == false)
    }

    @Test func usersDisableAndEnable() async throws {
        let user = try await signIn("001111.dis.2222", email: "dis@example.com")
        let session = SessionID()
        try await withStore { store in
            try await store.createSession(
                firstToken: RefreshTokenRecord(
                    hash: Array(repeating: 7, count: 32),
                    sessionID: session,
                    userID: user.id,
                    issuedAt: Date(),
                    expiresAt: Date().addingTimeInterval(3_600)
                ),
                now: Date()
            )
        }

        let disabled = try await SiwaProcess.run(["users", "disable", "DIS@example.com"], environment: environment)
        #expect(disabled.status == 0, "\(disabled.stderr)")
        #expect(disabled.stdout.contains("account \(user.id) disabled, 1 session(s) ended"), "\(disabled.stdout)")
        let (stored, revoked) = try await withStore { store in
            (try await store.user(id: user.id), try await store.revokedSessions(since: .distantPast))
        }
        #expect(stored?.isDisabled == true)
        #expect(revoked.map(\.sessionID) == [session])
        let list = try await SiwaProcess.run(["users", "list"], environment: environment)
        #expect(list.stdout.contains("  disabled  "), "\(list.stdout)")
        let shown = try await SiwaProcess.run(["users", "show", user.id.description], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "disabled")
        #expect(object["disabledAt"] is String)
        #expect(object["email"] as? String == "dis@example.com")

        let enabled = try await SiwaProcess.run(
            ["users", "enable", "001111.dis.2222", "--json"],
            environment: environment
        )
        #expect(enabled.status == 0, "\(enabled.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(enabled.stdout.utf8)) as? [String: Any])
        #expect(answer["status"] as? String == "active")
        #expect(try await withStore { try await $0.user(id: user.id)?.isDisabled } == false)
        let listJSON = try await SiwaProcess.run(["users", "list", "--json"], environment: environment)
        let users = try #require(
            try JSONSerialization.jsonObject(with: Data(listJSON.stdout.utf8)) as? [[String: Any]]
        )
        #expect(users.first?["status"] as? String == "active")

        let missing = try await SiwaProcess.run(["users", "disable", "nobody"], environment: environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no account nobody"))
    }

    // MARK: Helpers

    private func withStore<R>(_ body: (SQLAccountStore) async throws -> R) async throws -> R {
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!, body)
    }

    /// The CLI names an account's state as the console does: one whose Apple consent ended is "consent revoked",
    /// not "active".
    @Test func anAccountWhoseConsentEndedIsNotActive() async throws {
        let user = try await signIn("001111.gone.2222", email: "gone@example.com")
        try await withStore { store in _ = try await store.endAppleConsent(userID: user.id, now: Date()) }
        let show = try await SiwaProcess.run(["users", "show", "gone@example.com"], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "consent_revoked", "\(show.stdout)")
        #expect(object["appleConsentRevokedAt"] != nil)
        let list = try await SiwaProcess.run(["users", "list"], environment: environment)
        let line = try #require(list.stdout.split(separator: "\n").first { $0.contains("gone@example.com") })
        #expect(line.contains("001111.gone.2222") && line.contains("consent revoked"), "\(line)")
    }

    private func signIn(_ sub: String, email: String) async throws -> UserRecord {
        try await withStore { store in
            try await store.signIn(
                AppleSignInFacts(appleUserID: AppleUserID(sub), clientID: "com.example.app", email: email),
                now: Date()
            ).user
        }
    }
}
