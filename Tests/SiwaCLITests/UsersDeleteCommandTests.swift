import AccountStore
import AccountStoreSQL
import AppleSignIn
import Crypto
import Foundation
import Logging
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `siwa users delete` as a subprocess on a SQLite file, revoking at `siwa emulator` (also a subprocess).
@Suite("siwa users delete")
struct UsersDeleteCommandTests {
    let folder: TemporaryFolder
    var directory: URL { folder.url }
    let environment: [String: String]
    let dataKey = SymmetricKey(size: .bits256)

    init() throws {
        folder = try TemporaryFolder("siwa-delete")
        let keyFile = folder.url.appendingPathComponent("data.key").path
        let keyText = dataKey.withUnsafeBytes { Data($0).base64EncodedString() }
        try Data(keyText.utf8).write(to: URL(fileURLWithPath: keyFile))
        environment = [
            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
            "SIWA_DATA_KEY_FILE": keyFile,
            "SIWA_BUNDLE_IDS": "com.example.siwa.demo",
        ]
    }

    @Test func anUnknownAccountExitsNonZero() async throws {
        #expect(try await SiwaProcess.run(["migrate"], environment: environment).status == 0)
        let result = try await SiwaProcess.run(["users", "delete", "nobody", "--yes"], environment: environment)
        #expect(result.status == 1)
        #expect(result.stderr.contains("no account nobody"))
    }

    @Test func anAccountWithoutAppleTokenIsDeleted() async throws {
        let userID = try await createUser(sub: "001111.nottoken.2222", appleToken: nil)
        let result = try await SiwaProcess.run(
            ["users", "delete", userID.description, "--json", "--yes"],
            environment: environment
        )
        #expect(result.status == 0, "\(result.stderr)")
        let output = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(output["id"] as? String == userID.description)
        #expect(output["appleRevocation"] as? String == "no_apple_token")
        #expect(output["mode"] as? String == "delete")
        let again = try await SiwaProcess.run(["users", "delete", userID.description, "-y"], environment: environment)
        #expect(again.status == 1)
    }

    /// A script (standard input not a terminal) must say `--yes`: without it nothing is deleted, whatever it pipes in.
    @Test func withoutYesAndWithoutATerminalItRefusesAndDeletesNothing() async throws {
        let userID = try await createUser(sub: "001111.kept.2222", appleToken: nil)
        for stdin in [nil, "y\n"] {
            let result = try await SiwaProcess.run(
                ["users", "delete", userID.description],
                stdin: stdin,
                environment: environment
            )
            #expect(result.status == 2)
            #expect(result.stderr.contains("pass --yes"), "\(result.stderr)")
        }
        #expect(try await withStore { try await $0.user(id: userID) } != nil, "the account is still there")
    }

    /// An email names the account when exactly one has it; two accounts sharing it are refused by name.
    @Test func anEmailNamesTheAccountOnlyWhenUnique() async throws {
        let first = try await createUser(sub: "001111.first.2222", appleToken: nil, email: "Shared@example.com")
        let second = try await createUser(sub: "001111.second.2222", appleToken: nil, email: "shared@example.com")
        let ambiguous = try await SiwaProcess.run(
            ["users", "delete", "shared@example.com", "--yes"],
            environment: environment
        )
        #expect(ambiguous.status == 1)
        #expect(ambiguous.stderr.contains("2 accounts have the email"), "\(ambiguous.stderr)")
        #expect(ambiguous.stderr.contains(first.description) && ambiguous.stderr.contains(second.description))

        #expect(
            try await SiwaProcess.run(["users", "delete", second.description, "--yes"], environment: environment)
                .status == 0
        )
        let unique = try await SiwaProcess.run(
            ["users", "delete", "SHARED@example.com", "--yes"],
            environment: environment
        )
        #expect(unique.status == 0, "\(unique.stderr)")
        #expect(unique.stdout.contains("account \(first) deleted"))
    }

    @Test func theAppleTokenIsRevokedAtAppleOrQueued() async throws {
        let (emulator, port) = try await SiwaProcess.startEmulator(in: directory)
        defer { SiwaProcess.stopEmulator(emulator) }
        var apple = environment
        apple["SIWA_APPLE_BASE_URL"] = "http://127.0.0.1:\(port)"
        apple["SIWA_TEAM_ID"] = "DEMOTEAM01"
        apple["SIWA_KEY_ID"] = "DEMOKEY001"
        apple["SIWA_PRIVATE_KEY_FILE"] = directory.appendingPathComponent("siwa-emulator/AuthKey_DEMOKEY001.p8").path

        let revoked = try await createUser(sub: "001111.revoked.2222", appleToken: "r.apple-refresh-token")
        let result = try await SiwaProcess.run(["users", "delete", "001111.revoked.2222", "--yes"], environment: apple)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("account \(revoked) deleted"))
        #expect(result.stdout.contains("Apple token revoked at Apple"))
        #expect(try await revokeCalls(port: port) == 1)
        #expect(try await pendingRevocations().isEmpty)

        // Apple failing: the account still goes, the revocation stays queued for the server to retry.
        try await control(port: port, "/emulator/faults", ["endpoint": "revoke", "mode": "error"])
        let queued = try await createUser(sub: "001111.queued.2222", appleToken: "r.another-token")
        let failing = try await SiwaProcess.run(
            ["users", "delete", queued.description, "--json", "--yes"],
            environment: apple
        )
        #expect(failing.status == 0, "\(failing.stderr)")
        let output = try #require(try JSONSerialization.jsonObject(with: Data(failing.stdout.utf8)) as? [String: Any])
        #expect(output["appleRevocation"] as? String == "queued")
        #expect(output["retryAt"] is String)
        let pending = try await pendingRevocations()
        #expect(pending.map(\.userID) == [queued])
        #expect(pending.first?.attempts == 1)
    }

    // MARK: Helpers

    private func withStore<R>(_ body: (SQLAccountStore) async throws -> R) async throws -> R {
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!, body)
    }

    /// An account, with an Apple refresh token sealed like the server seals it (AES-GCM under the data key).
    private func createUser(sub: String, appleToken: String?, email: String? = nil) async throws -> UserID {
        try await withStore { store in
            let user = try await store.signIn(
                AppleSignInFacts(
                    appleUserID: AppleUserID(sub),
                    clientID: "com.example.siwa.demo",
                    email: email ?? "\(sub)@x.example"
                ),
                now: Date()
            ).user
            if let appleToken {
                let sealed = try #require(try AES.GCM.seal(Array(appleToken.utf8), using: dataKey).combined)
                try await store.saveAppleToken(
                    AppleTokenRecord(
                        userID: user.id,
                        clientID: "com.example.siwa.demo",
                        encryptedRefreshToken: Array(sealed),
                        storedAt: Date(),
                        lastValidatedAt: Date()
                    )
                )
            }
            return user.id
        }
    }

    private func pendingRevocations() async throws -> [PendingAppleRevocation] {
        try await withStore { try await $0.dueAppleRevocations(now: .distantFuture, limit: 10) }
    }

    /// Successful revocations in the emulator's log.
    private func revokeCalls(port: Int) async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/emulator/log")!)
        let log = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return log.filter { $0["endpoint"] as? String == "revoke" && $0["outcome"] as? String == "200" }.count
    }

    private func control(port: Int, _ path: String, _ body: [String: Any]) async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }
}
