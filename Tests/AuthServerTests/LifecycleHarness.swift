import AccountStore
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

/// The emulator as Apple, with its server-to-server notifications delivered to whichever siwa server is current, and
/// any number of siwa servers (at once or one after the other) on one shared store: for the account lifecycle.
struct LifecycleHarness: Sendable {
    static let bundleID = ServerHarness.bundleID
    static let otherTeamBundleID = ServerHarness.otherTeamBundleID

    let emulatorURL: String
    let store: any AccountStore
    let clock: ManualWallClock
    let dataKey: SymmetricKey
    let apple: AppleSignInConfiguration
    let delivery: ForwardingDelivery

    /// Sends the emulator's notifications to the server last started (or chosen) and keeps each body.
    final class ForwardingDelivery: NotificationDelivery {
        let target = Mutex<Int?>(nil)
        let bodies = Mutex<[[UInt8]]>([])

        var last: [UInt8]? { bodies.withLock { $0.last } }

        func post(json body: [UInt8], to url: String) async throws -> Int {
            bodies.withLock { $0.append(body) }
            guard let port = target.withLock({ $0 }) else { return 503 }
            var request = HTTPRequest(
                method: .post,
                scheme: "http",
                authority: "127.0.0.1:\(port)",
                path: "/auth/apple/notifications"
            )
            request.headerFields[.contentType] = "application/json"
            let answer = try await AsyncHTTPClientTransport().send(request, body: body, timeout: .seconds(10))
            return answer.response.status.code
        }
    }

    /// The default server settings of these tests: no rate limit, a fast store refresh and revocation worker, a
    /// validator that only runs when a test asks for it, and no idle timeout. A test keeps one client connection per
    /// server (HummingbirdTesting's client does not reconnect), and tests with two servers leave one unused while they
    /// work on the other: on a loaded machine for longer than the idle timeout, which then closed it, and the next
    /// request failed with "I/O on closed channel" (`SlowClientTests` test the timeout itself).
    static func configuration(
        _ adjust: (inout AccountLifecycleConfiguration) -> Void = { _ in }
    )
        -> AuthServerConfiguration
    {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.idleTimeout = nil
        configuration.lifecycle.revocationPollInterval = .milliseconds(100)
        configuration.lifecycle.appleValidationPollInterval = .seconds(3600)
        configuration.lifecycle.appleValidationInterval = 3600
        adjust(&configuration.lifecycle)
        return configuration
    }

    /// Runs `body` with an emulator; `notifications: false` registers no notification URL (Apple's change then
    /// reaches siwa only through validation).
    static func run(
        store: any AccountStore = InMemoryAccountStore(),
        notifications: Bool = true,
        _ body: @escaping @Sendable (LifecycleHarness) async throws -> Void
    ) async throws {
        let teamKey = P256.Signing.PrivateKey()
        let clock = ManualWallClock(Date())
        let notificationURL = notifications ? "http://siwa.invalid/auth/apple/notifications" : nil
        let delivery = ForwardingDelivery()
        let emulator = try await AppleIDEmulator(
            configuration: EmulatorConfiguration(
                teams: [
                    .init(
                        teamID: ServerHarness.teamID,
                        keyID: ServerHarness.keyID,
                        publicKeyPEM: teamKey.publicKey.pemRepresentation,
                        clients: [.init(clientID: bundleID, notificationURL: notificationURL)]
                    ),
                    .init(
                        teamID: "TEAMOTHER1",
                        keyID: "KEYOTHER01",
                        publicKeyPEM: P256.Signing.PrivateKey().publicKey.pemRepresentation,
                        clients: [.init(clientID: otherTeamBundleID, notificationURL: notificationURL)]
                    ),
                ],
                allowLocalRedirectURIs: true
            ),
            delivery: delivery,
            now: { clock.now }
        )
        try await Application(router: emulator.router()).test(.live) { emulatorClient in
            let emulatorURL = "http://127.0.0.1:\(try #require(emulatorClient.port))"
            let apple = try AppleSignInConfiguration(
                bundleIDs: [ClientID(bundleID)],
                credentials: ClientSecretCredentials(
                    teamID: try TeamID(ServerHarness.teamID),
                    keyID: try KeyID(ServerHarness.keyID),
                    key: AppleDeveloperKey(privateKey: teamKey)
                ),
                appleBaseURL: try AppleBaseURL(emulatorURL)
            )
            try await body(
                LifecycleHarness(
                    emulatorURL: emulatorURL,
                    store: store,
                    clock: clock,
                    dataKey: SymmetricKey(size: .bits256),
                    apple: apple,
                    delivery: delivery
                )
            )
        }
    }

    /// Runs `body` with a siwa server on the shared store; it receives the emulator's notifications from now on.
    func withServer(
        _ configuration: AuthServerConfiguration = LifecycleHarness.configuration(),
        _ body: @escaping @Sendable (ServerHarness) async throws -> Void
    ) async throws {
        var logger = Logger(label: "siwa-lifecycle-test")
        logger.logLevel = .critical
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
            let port = try #require(client.port)
            delivery.target.withLock { $0 = port }
            try await body(
                ServerHarness(emulatorURL: emulatorURL, server: client, store: store, clock: clock, dataKey: dataKey)
            )
        }
    }

    /// Calls the emulator's control API.
    func control(_ path: String, _ body: [String: Any]) async throws {
        let base = try AppleBaseURL(emulatorURL)
        var request = HTTPRequest(method: .post, scheme: base.scheme, authority: base.authority, path: path)
        request.headerFields[.contentType] = "application/json"
        let answer = try await AsyncHTTPClientTransport().send(
            request,
            body: Array(try JSONSerialization.data(withJSONObject: body)),
            timeout: .seconds(10)
        )
        #expect(answer.response.status == .ok, "\(path)")
    }

    /// Emulator log entries of `endpoint` (and grant type), e.g. `("token", "refresh_token")` for validations.
    func emulatorCalls(_ endpoint: String, grantType: String? = nil, outcome: String? = nil) async throws -> Int {
        let base = try AppleBaseURL(emulatorURL)
        let answer = try await AsyncHTTPClientTransport().send(
            HTTPRequest(method: .get, scheme: base.scheme, authority: base.authority, path: "/emulator/log"),
            body: nil,
            timeout: .seconds(10)
        )
        let log = (try JSONSerialization.jsonObject(with: Data(answer.body))) as? [[String: Any]] ?? []
        return log.filter { entry in
            entry["endpoint"] as? String == endpoint
                && (grantType == nil || entry["grantType"] as? String == grantType)
                && (outcome == nil || entry["outcome"] as? String == outcome)
        }.count
    }

    /// Waits up to `seconds` (real time) for `condition`.
    func eventually(
        within seconds: Double = 5,
        _ condition: @Sendable () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }
}
