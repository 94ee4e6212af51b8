import AccountStoreSQL
import AppleIDEmulator
import AppleSignIn
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Synchronization
import Testing

@testable import SiwaCLI

/// `siwa doctor --apple` as a subprocess against the emulator, which refuses client secrets as Apple does: right
/// credentials pass, and a wrong key id, a wrong team and a client id the team does not register each fail with the
/// likely cause named, never printing the secret or the key.
@Suite("siwa doctor --apple")
struct DoctorAppleTests {
    static let teamID = "TEAMDOC001"
    static let keyID = "KEYDOC0001"
    static let bundleID = "com.example.doctor"
    static let servicesID = "com.example.doctor.web"

    let folder = try! TemporaryFolder("siwa-doctor-apple")

    @Test func rightCredentialsPassForEveryClientID() async throws {
        let run = try await doctor()
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let bundle = try finding("Apple client \(Self.bundleID)", in: run)
        #expect(bundle.ok)
        #expect(bundle.message.contains("invalid_grant"))
        #expect(try finding("Apple client \(Self.servicesID)", in: run).ok)
        let keys = try finding("Apple keys", in: run)
        #expect(keys.ok)
        #expect(keys.message.contains(" ms"))
        #expect(bundle.message.contains(" ms"))
        #expect(try finding("Apple clock", in: run).ok)
    }

    @Test func aWrongKeyIDIsNamedFromTheKeyFile() async throws {
        let run = try await doctor(keyID: "KEYWRONG01")
        #expect(run.status == 3)
        let bundle = try finding("Apple client \(Self.bundleID)", in: run)
        #expect(!bundle.ok)
        #expect(bundle.message.contains("invalid_client"))
        #expect(
            bundle.message.contains("key id: the key file is AuthKey_\(Self.keyID).p8 but SIWA_KEY_ID is KEYWRONG01")
        )
    }

    @Test func aWrongTeamIsNamedWhenTheKeyFileAgrees() async throws {
        let run = try await doctor(teamID: "TEAMWRONG1")
        #expect(run.status == 3)
        for clientID in [Self.bundleID, Self.servicesID] {
            let result = try finding("Apple client \(clientID)", in: run)
            #expect(!result.ok)
            #expect(result.message.contains("team id or key"), "\(result.message)")
            #expect(result.message.contains("SIWA_TEAM_ID TEAMWRONG1"))
            #expect(!result.message.contains("key id: the key file"))
        }
    }

    @Test func aClientIDTheTeamDoesNotRegisterIsNamedAgainstOneThatPasses() async throws {
        let run = try await doctor(bundleIDs: "\(Self.bundleID), com.example.unregistered")
        #expect(run.status == 3)
        #expect(try finding("Apple client \(Self.bundleID)", in: run).ok)
        let unknown = try finding("Apple client com.example.unregistered", in: run)
        #expect(!unknown.ok)
        #expect(unknown.message.contains("client id: Apple accepts the same key and team for \(Self.bundleID)"))
        #expect(unknown.message.contains("a Services ID given as a bundle id"))
    }

    @Test func neverPrintsTheSecretOrTheKey() async throws {
        for run in [try await doctor(), try await doctor(keyID: "KEYWRONG01", json: false)] {
            let output = run.stdout + run.stderr
            // A client secret is a JWT, whose base64url header starts `eyJ` (`{"`); the key is a PEM.
            #expect(!output.contains("eyJ"))
            #expect(!output.contains("PRIVATE KEY"))
            #expect(output.contains("Apple client \(Self.bundleID)"))
        }
    }

    @Test func aConfiguredKeySetOlderThanApplesIsNamedByTheKidItLacks() async throws {
        let old = try TestAppleKeys(count: 1, kidPrefix: "retired-")
        let file = try folder.write("apple-keys.json", String(decoding: try old.jwks(), as: UTF8.self))
        let run = try await doctor(environment: ["SIWA_APPLE_KEY_SET_FILE": file])
        let published = try #require(run.appleKeyIDs)
        #expect(!published.isEmpty)
        let keySet = try finding("Apple keys copy", in: run)
        #expect(!keySet.ok)
        #expect(keySet.message.contains("older than Apple's keys"), "\(keySet.message)")
        for kid in published { #expect(keySet.message.contains(kid), "\(keySet.message)") }
        #expect(!keySet.message.contains("retired-1"))
        #expect(run.status != 0)

        // A copy of what Apple publishes now passes.
        let current = DoctorCommand.configuredKeySetFinding(
            ConfiguredAppleKeySet(keySet: try old.keySet(), use: .instead),
            published: try old.keySet()
        )
        #expect(current.ok)
    }

    @Test func aConfiguredKeySetWithoutKidIsAProblemOfItsSetting() async throws {
        let file = try folder.write(
            "apple-keys.json",
            #"{"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "n": "AQAB", "e": "AQAB"}]}"#
        )
        let run = try await doctor(environment: ["SIWA_APPLE_KEY_SET_FILE": file])
        #expect(run.status != 0)
        #expect(run.stdout.contains("SIWA_APPLE_KEY_SET"), "\(run.stdout)")
        #expect(run.stdout.contains("key 1: has no"), "\(run.stdout)")
    }

    @Test func theClockIsNamedWhenItIsMinutesOff() throws {
        func causes(clockSkew: TimeInterval) -> [String] {
            DoctorCommand.likelyCauses(
                Self.bundleID,
                isServicesID: false,
                facts: DoctorCommand.CredentialFacts(
                    teamID: Self.teamID,
                    keyID: Self.keyID,
                    keyFile: "/keys/AuthKey_\(Self.keyID).p8",
                    passed: [],
                    clockSkew: clockSkew
                )
            )
        }
        #expect(causes(clockSkew: -300).first?.hasPrefix("clock: this machine's clock is 300 s behind Apple's") == true)
        #expect(causes(clockSkew: 2).allSatisfy { !$0.hasPrefix("clock") })
        #expect(!DoctorCommand.clockFinding(-300).ok)
        #expect(DoctorCommand.clockFinding(2).ok)
        let header = try #require(DoctorCommand.appleDate("Tue, 24 Nov 2026 10:00:00 GMT"))
        #expect(header == Date(timeIntervalSince1970: 1_795_514_400))
    }

    // MARK: Helpers

    /// Runs `siwa doctor --apple` against an emulator that registers ``teamID`` with ``keyID``, the bundle id and the
    /// Services ID, with the settings given.
    private func doctor(
        teamID: String = teamID,
        keyID: String = keyID,
        bundleIDs: String = bundleID,
        json: Bool = true,
        environment: [String: String] = [:]
    ) async throws -> DoctorRun {
        let teamKey = P256.Signing.PrivateKey()
        let keyFile = try folder.write("AuthKey_\(Self.keyID).p8", teamKey.pemRepresentation)
        let database = folder.url.appendingPathComponent("siwa.sqlite").path
        try await SQLAccountStore.sqlite(path: database, logger: Logger(label: "test")).shutdown()
        let emulator = try await AppleIDEmulator(
            configuration: EmulatorConfiguration(teams: [
                .init(
                    teamID: Self.teamID,
                    keyID: Self.keyID,
                    publicKeyPEM: teamKey.publicKey.pemRepresentation,
                    clients: [
                        .init(clientID: Self.bundleID),
                        .init(
                            clientID: Self.servicesID,
                            redirectURIs: ["https://auth.example.com/auth/apple/callback"]
                        ),
                    ]
                )
            ]),
            delivery: nil
        )
        let result = ResultBox()
        try await Application(router: emulator.router()).test(.live) { client in
            let port = try #require(client.port)
            let run = try await SiwaProcess.run(
                ["doctor", "--apple"] + (json ? ["--json"] : []),
                environment: [
                    "SIWA_TEAM_ID": teamID, "SIWA_KEY_ID": keyID, "SIWA_PRIVATE_KEY_FILE": keyFile,
                    "SIWA_BUNDLE_IDS": bundleIDs, "SIWA_SERVICES_ID": Self.servicesID,
                    "SIWA_PUBLIC_URL": "https://auth.example.com", "SIWA_APPLE_BASE_URL": "http://127.0.0.1:\(port)",
                    "SIWA_DATABASE_URL": "", "SIWA_DATABASE_PATH": database,
                    "SIWA_DATA_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
                ].merging(environment) { _, given in given }
            )
            // The kids the emulator publishes, which a configured copy of its key set is checked against.
            let keys = try await client.execute(uri: "/auth/keys", method: .get) { response in
                let object =
                    try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any]
                return (object?["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String }
            }
            result.value.withLock { $0 = DoctorRun(result: run, appleKeyIDs: keys) }
        }
        return try #require(result.value.withLock { $0 })
    }

    /// A run of doctor, and the kids the emulator published during it.
    @dynamicMemberLookup
    private struct DoctorRun: Sendable {
        let result: SiwaProcess.Result
        let appleKeyIDs: [String]?

        subscript<T>(dynamicMember path: KeyPath<SiwaProcess.Result, T>) -> T { result[keyPath: path] }
    }

    private final class ResultBox: Sendable {
        let value = Mutex<DoctorRun?>(nil)
    }

    /// The one finding about `setting` in `doctor --json`'s output.
    private func finding(_ setting: String, in run: DoctorRun) throws -> (ok: Bool, message: String) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let list = try #require(object["findings"] as? [[String: Any]])
        let matching = list.filter { $0["setting"] as? String == setting }
        try #require(matching.count == 1, "one \(setting) finding in \(run.stdout)")
        return (try #require(matching[0]["ok"] as? Bool), try #require(matching[0]["message"] as? String))
    }
}
