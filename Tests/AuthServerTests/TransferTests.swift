import AccountStore
import AccountStoreSQL
import AppleIDEmulator
import AppleSignIn
import AppleSignInAsyncHTTPClient
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Synchronization
import Testing

/// Team transfer end to end (Apple's TN3159) against the emulator as Apple with two teams: accounts made under team A,
/// exported toward team B, imported by team B, and signed in under team B, on the SQL stores `siwa` uses.
@Suite("Team transfer")
struct TransferTests {
    static let teamA = "TEAMAAAAA1"
    static let teamB = "TEAMBBBBB1"
    static let bundleA = "com.example.app"
    static let bundleB = "org.other.app"

    /// The emulator with both teams, and each team's Apple configuration pointing at it.
    struct Teams: Sendable {
        let emulatorURL: String
        let store: any AccountStore
        let clock: ManualWallClock
        let dataKey = SymmetricKey(size: .bits256)
        let appleA: AppleSignInConfiguration
        let appleB: AppleSignInConfiguration

        /// The service `siwa transfer export|import` runs, with one team's settings.
        func transferService(_ apple: AppleSignInConfiguration) -> AccountTransferService {
            var logger = Logger(label: "siwa-transfer-test")
            logger.logLevel = .critical
            let transport = AsyncHTTPClientTransport()
            let client = AppleAPIClient(
                configuration: apple,
                transport: transport,
                verifier: IdentityTokenVerifier(
                    configuration: apple,
                    keys: AppleKeyCache(
                        source: AppleKeysEndpoint(baseURL: apple.appleBaseURL, transport: transport, logger: logger),
                        clock: clock,
                        logger: logger
                    ),
                    clock: clock
                ),
                clientSecrets: ClientSecretFactory(credentials: apple.credentials!, lifetime: 3600, clock: clock),
                logger: logger
            )
            return AccountTransferService(
                store: store,
                apple: client,
                clientID: apple.bundleIDs[0],
                clock: clock,
                logger: logger
            )
        }

        /// Runs `body` with a siwa server configured for one team.
        func withServer(
            _ apple: AppleSignInConfiguration,
            _ body: @escaping @Sendable (ServerHarness) async throws -> Void
        ) async throws {
            var logger = Logger(label: "siwa-transfer-test")
            logger.logLevel = .critical
            // No idle timeout: the other server's client connection sits unused meanwhile (see
            // LifecycleHarness.configuration).
            var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
            configuration.idleTimeout = nil
            let app = try await buildApplication(
                configuration: configuration,
                apple: apple,
                store: store,
                transport: AsyncHTTPClientTransport(),
                sealer: DataSealer(key: dataKey),
                clock: clock,
                port: 0,
                logger: logger
            )
            try await app.test(.live) { client in
                try await body(
                    ServerHarness(
                        emulatorURL: emulatorURL,
                        server: client,
                        store: store,
                        clock: clock,
                        dataKey: dataKey
                    )
                )
            }
        }
    }

    @Test(arguments: SQLStoreServerTests.backends)
    func exportThenImportKeepsEveryAccount(backend: SQLStoreServerTests.Backend) async throws {
        try await withTeams(backend) { teams in
            // Team A's users sign in.
            let accounts = Mutex<[String: String]>([:])
            try await teams.withServer(teams.appleA) { server in
                for email in ["ann@example.com", "bob@example.com", "cai@example.com"] {
                    let answer = try await server.signIn(email, givenName: "User", hideEmail: email.hasPrefix("bob"))
                    #expect(answer.status == .ok)
                    let id = try #require(answer.json.user.string("id"))
                    accounts.withLock { $0[email] = id }
                }
            }
            let idOf = accounts.withLock { $0 }

            // Team A exports toward team B, in batches; a re-run has nothing left to do.
            let exporter = teams.transferService(teams.appleA)
            var batches = 0
            let exported = try await exporter.export(targetTeam: try TeamID(Self.teamB), batchSize: 2) { _ in
                batches += 1
            }
            #expect(exported.done == 3)
            #expect(exported.failed == 0)
            #expect(batches == 2, "three accounts in batches of two")
            let again = try await exporter.export(targetTeam: try TeamID(Self.teamB), batchSize: 2)
            #expect(again.done == 0, "a re-run skips the accounts already exported")
            #expect(try await teams.store.pendingTransfers(after: nil, limit: 10).count == 3)
            let exportEvents = try await teams.store.auditEvents(
                AuditEventFilter(types: [.transferExported]),
                limit: 10,
                after: nil
            ).items
            #expect(Set(exportEvents.compactMap { $0.userID?.description }) == Set(idOf.values))
            #expect(exportEvents.allSatisfy { $0.actor == .operator && $0.details["target_team"] == Self.teamB })

            // Cai signs in under team B before the import: the token's transfer_sub finds the account.
            try await teams.withServer(teams.appleB) { server in
                let cai = try await signIn(server, "cai@example.com", clientID: Self.bundleB)
                #expect(cai.status == .ok)
                #expect(cai.json.user.string("id") == idOf["cai@example.com"], "the same account")
                #expect(cai.json["isNewUser"] as? Bool == false)
            }

            // Team B imports the rest.
            let imported = try await teams.transferService(teams.appleB)
                .importPending(team: try TeamID(Self.teamB), batchSize: 10)
            #expect(imported.done == 2, "ann and bob; cai was moved by signing in")
            #expect(imported.failed == 0)
            #expect(try await teams.store.pendingTransfers(after: nil, limit: 10).isEmpty)
            let importEvents = try await teams.store.auditEvents(
                AuditEventFilter(types: [.transferCompleted]),
                limit: 10,
                after: nil
            ).items
            let byImport = importEvents.filter { $0.actor == .operator && $0.reason == "import" }
            #expect(
                Set(byImport.compactMap { $0.userID?.description })
                    == Set([idOf["ann@example.com"], idOf["bob@example.com"]].compactMap { $0 })
            )
            // The transfer Cai's sign-in finished is in the audit log too, done by the user.
            let bySignIn = importEvents.filter { $0.actor == .user && $0.reason == "sign_in" }
            #expect(bySignIn.map { $0.userID?.description } == [idOf["cai@example.com"]])
            #expect(bySignIn.first?.clientID?.rawValue == Self.bundleB)
            #expect(importEvents.count == 3)
            let bobID = try #require(idOf["bob@example.com"].flatMap { UserID($0) })
            let bob = try #require(try await teams.store.user(id: bobID))
            #expect(bob.isPrivateEmail, "bob hid his email: team B sees a relay address")
            #expect(bob.email?.hasSuffix("@privaterelay.appleid.com") == true)
            #expect(bob.givenName == "User", "the account keeps its name")

            // Under team B (new sub, token with transfer_sub), each signs in to the same account.
            try await teams.withServer(teams.appleB) { server in
                for email in ["ann@example.com", "bob@example.com", "cai@example.com"] {
                    let credential = try await server.appleCredential(email, clientID: Self.bundleB)
                    let newSub = try #require(credential["user"] as? String)
                    let answer = try await signIn(server, credential: credential)
                    #expect(answer.status == .ok)
                    #expect(answer.json.user.string("id") == idOf[email], "\(email) keeps the account")
                    #expect(answer.json["isNewUser"] as? Bool == false)
                    let stored = try #require(try await teams.store.user(appleUserID: AppleUserID(newSub)))
                    #expect(stored.id.description == idOf[email], "the account has the sub of team B")
                }
                // Someone who never used the app under team A is a new user.
                let newcomer = try await signIn(server, "dan@example.com", clientID: Self.bundleB)
                #expect(newcomer.json["isNewUser"] as? Bool == true)
            }
        }
    }

    @Test(arguments: SQLStoreServerTests.backends)
    func importSkipsOtherTeamsAndReportsWhatAppleRefuses(backend: SQLStoreServerTests.Backend) async throws {
        try await withTeams(backend) { teams in
            let ann = try await teams.store.signIn(
                AppleSignInFacts(appleUserID: AppleUserID("001.unknown-to-apple.1"), clientID: "com.example.app"),
                now: teams.clock.now
            ).user
            // Apple does not know this sub: one failure, the run goes on.
            let exported = try await teams.transferService(teams.appleA)
                .export(targetTeam: try TeamID(Self.teamB), batchSize: 10)
            #expect(exported.done == 0)
            #expect(exported.failed == 1)
            #expect(exported.failures.first?.userID == ann.id.description)
            #expect(exported.failures.first?.code == "invalidRequest")

            // A transfer toward another team is left alone by team B; an unknown transfer_sub fails.
            try await teams.store.setTransferSub(
                userID: ann.id,
                transferSub: AppleUserID("000.not-issued.1"),
                targetTeam: "TEAMCCCCC1",
                now: teams.clock.now
            )
            let skipped = try await teams.transferService(teams.appleB)
                .importPending(team: try TeamID(Self.teamB), batchSize: 10)
            #expect(skipped.skipped == 1)
            #expect(skipped.done == 0)
            try await teams.store.setTransferSub(
                userID: ann.id,
                transferSub: AppleUserID("000.not-issued.1"),
                targetTeam: Self.teamB,
                now: teams.clock.now
            )
            let refused = try await teams.transferService(teams.appleB)
                .importPending(team: try TeamID(Self.teamB), batchSize: 10)
            #expect(refused.failed == 1)
            #expect(refused.failures.first?.code == "invalidRequest")
            #expect(try await teams.store.user(id: ann.id)?.appleUserID == AppleUserID("001.unknown-to-apple.1"))
        }
    }

    // MARK: Helpers

    /// A native sign-in at `server` with a fresh credential from the emulator.
    private func signIn(
        _ server: ServerHarness,
        _ email: String,
        clientID: String
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        try await signIn(server, credential: try await server.appleCredential(email, clientID: clientID))
    }

    private func signIn(
        _ server: ServerHarness,
        credential: [String: Any]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let answer = try await server.call(
            .post,
            "/auth/apple/native",
            json: [
                "identityToken": credential["identityToken"] as? String ?? "",
                "authorizationCode": credential["authorizationCode"] as? String ?? "",
            ]
        )
        return (answer.status, answer.json)
    }

    /// The emulator with teams A and B on a fresh SQL store.
    private func withTeams(
        _ backend: SQLStoreServerTests.Backend,
        _ body: @escaping @Sendable (Teams) async throws -> Void
    ) async throws {
        try await SQLStoreServerTests.withStore(backend, name: "siwa-transfer") { store in
            try await runTeams(store: store, body)
        }
    }

    private func runTeams(
        store: any AccountStore,
        _ body: @escaping @Sendable (Teams) async throws -> Void
    ) async throws {
        let keyA = P256.Signing.PrivateKey()
        let keyB = P256.Signing.PrivateKey()
        let clock = ManualWallClock(Date())
        let emulator = try await AppleIDEmulator(
            configuration: EmulatorConfiguration(teams: [
                .init(
                    teamID: Self.teamA,
                    keyID: "KEYAAAAAA1",
                    publicKeyPEM: keyA.publicKey.pemRepresentation,
                    clients: [.init(clientID: Self.bundleA)]
                ),
                .init(
                    teamID: Self.teamB,
                    keyID: "KEYBBBBBB1",
                    publicKeyPEM: keyB.publicKey.pemRepresentation,
                    clients: [.init(clientID: Self.bundleB)]
                ),
            ]),
            delivery: nil,
            now: { clock.now }
        )
        try await Application(router: emulator.router()).test(.live) { emulatorClient in
            let emulatorURL = "http://127.0.0.1:\(try #require(emulatorClient.port))"
            func apple(
                team: String,
                keyID: String,
                key: P256.Signing.PrivateKey,
                bundle: String
            ) throws
                -> AppleSignInConfiguration
            {
                try AppleSignInConfiguration(
                    bundleIDs: [ClientID(bundle)],
                    credentials: ClientSecretCredentials(
                        teamID: try TeamID(team),
                        keyID: try KeyID(keyID),
                        key: AppleDeveloperKey(privateKey: key)
                    ),
                    appleBaseURL: try AppleBaseURL(emulatorURL)
                )
            }
            try await body(
                Teams(
                    emulatorURL: emulatorURL,
                    store: store,
                    clock: clock,
                    appleA: try apple(team: Self.teamA, keyID: "KEYAAAAAA1", key: keyA, bundle: Self.bundleA),
                    appleB: try apple(team: Self.teamB, keyID: "KEYBBBBBB1", key: keyB, bundle: Self.bundleB)
                )
            )
        }
    }
}
