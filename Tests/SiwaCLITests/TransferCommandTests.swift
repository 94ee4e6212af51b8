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

/// `siwa transfer export|import` as subprocesses: help, argument errors, missing credentials, and one round trip
/// against `siwa emulator` (also a subprocess).
@Suite("siwa transfer")
struct TransferCommandTests {
    let folder: TemporaryFolder
    var directory: URL { folder.url }
    let environment: [String: String]

    init() throws {
        folder = try TemporaryFolder("siwa-transfer")
        let keyFile = folder.url.appendingPathComponent("data.key").path
        let keyText = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
        try Data(keyText.utf8).write(to: URL(fileURLWithPath: keyFile))
        environment = [
            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
            "SIWA_DATA_KEY_FILE": keyFile,
            "SIWA_BUNDLE_IDS": "com.example.siwa.demo",
        ]
    }

    @Test func helpExplainsBothSidesWithAnExample() async throws {
        let export = try await SiwaProcess.run(["transfer", "export", "--help"])
        #expect(export.status == 0)
        #expect(export.stdout.contains("--target"))
        #expect(export.stdout.contains("--batch"))
        #expect(export.stdout.contains("siwa transfer export --target"), "an example")
        #expect(export.stdout.contains("running it"), "says how to resume")
        let importing = try await SiwaProcess.run(["transfer", "import", "--help"])
        #expect(importing.status == 0)
        #expect(importing.stdout.contains("siwa transfer import"))
        let overview = try await SiwaProcess.run(["transfer", "--help"])
        #expect(overview.stdout.contains("TN3159"))
    }

    @Test(arguments: [
        ["transfer", "export"],
        ["transfer", "export", "--target", "not a team!"],
        ["transfer", "export", "--target", "NEWTEAM456", "--batch", "0"],
        ["transfer", "import", "--batch", "100000"],
        ["transfer", "export", "--target", "NEWTEAM456", "--bogus"],
    ])
    func badArgumentsExitNonZero(arguments: [String]) async throws {
        let result = try await SiwaProcess.run(arguments, environment: environment)
        #expect(result.status != 0)
        #expect(!result.stderr.isEmpty)
    }

    @Test func withoutTeamCredentialsItSaysWhatIsMissing() async throws {
        #expect(try await SiwaProcess.run(["migrate"], environment: environment).status == 0)
        let result = try await SiwaProcess.run(["transfer", "import"], environment: environment)
        #expect(result.status == 2)
        #expect(result.stderr.contains("SIWA_TEAM_ID"))
    }

    @Test func exportThenImportAgainstTheEmulator() async throws {
        let (emulator, port) = try await SiwaProcess.startEmulator(in: directory)
        defer { SiwaProcess.stopEmulator(emulator) }
        let appleSub = try #require(try await nativeSignIn(port: port, email: "mover@example.com"))
        let userID = try await withStore { store in
            try await store.signIn(
                AppleSignInFacts(appleUserID: AppleUserID(appleSub), clientID: "com.example.siwa.demo"),
                now: Date()
            ).user.id
        }
        var apple = environment
        apple["SIWA_APPLE_BASE_URL"] = "http://127.0.0.1:\(port)"
        apple["SIWA_TEAM_ID"] = "DEMOTEAM01"
        apple["SIWA_KEY_ID"] = "DEMOKEY001"
        apple["SIWA_PRIVATE_KEY_FILE"] = directory.appendingPathComponent("siwa-emulator/AuthKey_DEMOKEY001.p8").path

        // The demo emulator has one team: it transfers to itself, which is enough to drive both commands.
        let export = try await SiwaProcess.run(["transfer", "export", "--target", "DEMOTEAM01"], environment: apple)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.contains("1 account(s) exported, 0 failed"))
        #expect(!export.stdout.contains(appleSub) && !export.stderr.contains(appleSub), "no sub is printed")
        let transfer = try #require(try await withStore { try await $0.transfer(userID: userID) })
        #expect(transfer.targetTeam == "DEMOTEAM01")
        let rerun = try await SiwaProcess.run(["transfer", "export", "--target", "DEMOTEAM01"], environment: apple)
        #expect(rerun.stdout.contains("0 account(s) exported"), "a re-run skips exported accounts")

        let imported = try await SiwaProcess.run(["transfer", "import", "--json"], environment: apple)
        #expect(imported.status == 0, "\(imported.stderr)")
        let output = try #require(
            try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [String: Any]
        )
        #expect(output["done"] as? Int == 1)
        #expect(output["failed"] as? Int == 0)
        #expect(!imported.stdout.contains(transfer.transferSub.rawValue), "no transfer_sub is printed")
        #expect(try await withStore { try await $0.transfer(userID: userID)?.transferredAt } != nil)

        // Apple refusing the team's key: exit 1 with the typed error.
        var wrongKey = apple
        let otherKey = directory.appendingPathComponent("other.p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: otherKey, atomically: true, encoding: .utf8)
        wrongKey["SIWA_PRIVATE_KEY_FILE"] = otherKey
        let refused = try await SiwaProcess.run(["transfer", "import"], environment: wrongKey)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("invalidClient"))
    }

    // MARK: Helpers

    private func withStore<R>(_ body: (SQLAccountStore) async throws -> R) async throws -> R {
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!, body)
    }

    /// Signs `email` in at the emulator's device and returns the demo team's `sub`.
    private func nativeSignIn(port: Int, email: String) async throws -> String? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/emulator/native-sign-in")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.httpBody = try JSONSerialization.data(withJSONObject: [
            "clientId": "com.example.siwa.demo", "email": email,
        ])
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["user"] as? String
    }
}
