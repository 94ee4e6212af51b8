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

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// siwa's server on a loopback port, with the Apple ID emulator as Apple: every call crosses real HTTP.
struct ServerHarness: Sendable {
    static let teamID = "TEAMSRV001"
    static let keyID = "KEYSRV0001"
    static let bundleID = "com.example.app"
    static let servicesID = "com.example.web"
    static let otherTeamBundleID = "org.other.app"

    let emulatorURL: String
    let server: any TestClientProtocol
    let store: any AccountStore
    let clock: ManualWallClock
    /// The team's key, which the emulator checks the server's client secrets with.
    var teamKey = P256.Signing.PrivateKey()
    /// The key that seals Apple refresh tokens at rest.
    let dataKey: SymmetricKey
    /// The server's own base URL on loopback (with `web: true`, also its public URL).
    var serverURL: String = ""
    /// The port the server listens on (with `web: true`; behind a proxy, the proxy's upstream).
    var listenPort = 0
    /// The cookies a browser keeps between requests that the tests do not pass themselves: the web flow's binding
    /// cookie, which the authorize route sets and Apple's cross-site `form_post` carries back.
    let browserCookies = BrowserCookieJar()
    /// The metrics listener's port once it listens (with `metrics: true`).
    var metricsPort = ListenerPort()

    /// Runs `body` with an emulator and a server built by `buildApplication`.
    /// - Parameters:
    ///   - web: listen on a port chosen in advance, make `http://127.0.0.1:<port>` the server's public URL and register
    ///     its `/auth/apple/callback` as a redirect URI of the Services ID, so that the emulator's `form_post` reaches
    ///     the server.
    ///   - servicesIDConfigured: give the server the Services ID (`false`: web sign-in is not configured).
    ///   - dataKey: the data key (a second server on the same store needs the first one's); a new one by default.
    ///   - publicOrigin: with `web`, the public URL for the server's port (an https proxy's, say) instead of
    ///     `http://127.0.0.1:<port>`.
    ///   - adjust: changes the configuration once its public URL is known (say, a relying party redirecting to it).
    ///   - logger: the server's logger (a test that reads the logs passes its own).
    ///   - keepsIdleTimeout: keep the configuration's idle timeout; without `web`, the server otherwise runs without
    ///     one (the live test client never reconnects).
    ///   - tls: with `web`, the server serves https itself (``ServerHarness/server`` then cannot reach it; drive it with
    ///     a browser or curl).
    ///   - metrics: run the metrics listener on a free port (``metrics(_:)`` calls it).
    ///   - appleKeyID: the key id the server's client secrets name (another than ``keyID``: Apple refuses them).
    ///   - sharedLimits: the limits shared with other instances (`nil`: as `buildApplication` makes them).
    ///   - emulatorOf: another harness whose emulator (and team key) this one uses, so that an identity token minted
    ///     for one server is good at both; a new emulator by default.
    static func run(
        store: any AccountStore = InMemoryAccountStore(),
        configuration: AuthServerConfiguration = AuthServerConfiguration(
            authRateLimit: nil,
            storeRefreshInterval: .milliseconds(200)
        ),
        web: Bool = false,
        servicesIDConfigured: Bool = true,
        dataKey givenDataKey: SymmetricKey? = nil,
        publicOrigin: (@Sendable (_ serverPort: Int) -> String)? = nil,
        tls: ServerTLS? = nil,
        keepsIdleTimeout: Bool = false,
        metrics: Bool = false,
        appleKeyID: String = keyID,
        sharedLimits: SharedLimits? = nil,
        emulatorOf other: ServerHarness? = nil,
        adjust: (@Sendable (inout AuthServerConfiguration) -> Void)? = nil,
        adjustApple: (@Sendable (inout AppleSignInConfiguration, _ emulatorURL: String) async throws -> Void)? = nil,
        logger: Logger = Logger(label: "siwa"),
        _ body: @escaping @Sendable (ServerHarness) async throws -> Void
    ) async throws {
        let teamKey = other?.teamKey ?? P256.Signing.PrivateKey()
        let clock = ManualWallClock(Date())
        let serverPort = web ? try freeLoopbackPort() : 0
        var webConfiguration = configuration
        let origin = publicOrigin?(serverPort) ?? "http://127.0.0.1:\(serverPort)"
        if web { webConfiguration.publicURL = origin }
        let metricsPort = ListenerPort()
        if metrics {
            webConfiguration.metricsListener = MetricsListener(port: 0) { channel in
                metricsPort.bound(channel.localAddress?.port)
            }
        }
        adjust?(&webConfiguration)
        // HummingbirdTesting's live client keeps one connection for the whole test and never reconnects: a test that
        // spent longer than the idle timeout elsewhere (minting credentials at the emulator, on a loaded machine) had
        // that connection closed under it, and its next request failed with "I/O on closed channel". So the server
        // runs without one, unless the test keeps it to test it; the web harness's relay reconnects like any client
        // and keeps the server's setting.
        if !web, !keepsIdleTimeout { webConfiguration.idleTimeout = nil }
        let configuration = webConfiguration
        // siwa's own callback and those of the compatibility contracts (ServiceStack, the Vapor tutorial).
        let webRedirectURIs =
            web
            ? [configuration.webCallbackURL, "\(origin)/auth/apple", "\(origin)/web/auth/siwa/callback"] : []
        let serve: @Sendable (String) async throws -> Void = { emulatorURL in
            var apple = try AppleSignInConfiguration(
                bundleIDs: [ClientID(bundleID)],
                servicesID: servicesIDConfigured ? ClientID(servicesID) : nil,
                credentials: ClientSecretCredentials(
                    teamID: try TeamID(teamID),
                    keyID: try KeyID(appleKeyID),
                    key: AppleDeveloperKey(privateKey: teamKey)
                ),
                appleBaseURL: try AppleBaseURL(emulatorURL)
            )
            try await adjustApple?(&apple, emulatorURL)
            let dataKey = givenDataKey ?? SymmetricKey(size: .bits256)
            let app = try await buildApplication(
                configuration: configuration,
                apple: apple,
                store: store,
                transport: AsyncHTTPClientTransport(),
                sealer: DataSealer(key: dataKey),
                sharedLimits: sharedLimits,
                clock: clock,
                port: serverPort,
                logger: logger,
                tls: tls
            )
            if web {
                // The server listens on its public URL, where the emulator's form_post (or a browser) finds it.
                try await WebLoopbackServer.serve(app, port: serverPort, tls: tls != nil) { server in
                    try await body(
                        ServerHarness(
                            emulatorURL: emulatorURL,
                            server: server,
                            store: store,
                            clock: clock,
                            teamKey: teamKey,
                            dataKey: dataKey,
                            serverURL: configuration.publicURL,
                            listenPort: serverPort,
                            metricsPort: metricsPort
                        )
                    )
                }
                return
            }
            try await app.test(.live) { server in
                let port = try #require(server.port)
                try await body(
                    ServerHarness(
                        emulatorURL: emulatorURL,
                        server: server,
                        store: store,
                        clock: clock,
                        teamKey: teamKey,
                        dataKey: dataKey,
                        serverURL: "http://127.0.0.1:\(port)",
                        listenPort: port,
                        metricsPort: metricsPort
                    )
                )
            }
        }
        if let other {
            try await serve(other.emulatorURL)
        } else {
            try await runEmulator(teamKey: teamKey, clock: clock, webRedirectURIs: webRedirectURIs, serve)
        }
    }

    /// Runs `body` with the emulator alone on a free loopback port: the harness's teams (``teamID`` with the bundle
    /// id and the Services ID, and another team), no notification delivery.
    /// - Parameters:
    ///   - teamKey: the key of ``teamID``, which its client secrets are signed with.
    ///   - webRedirectURIs: more redirect URIs of the Services ID.
    ///   - body: gets the emulator's base URL, `http://127.0.0.1:<port>`.
    static func runEmulator(
        teamKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(),
        clock: ManualWallClock = ManualWallClock(Date()),
        webRedirectURIs: [String] = [],
        _ body: @escaping @Sendable (_ emulatorURL: String) async throws -> Void
    ) async throws {
        var emulatorConfiguration = EmulatorConfiguration(teams: [
            .init(
                teamID: teamID,
                keyID: keyID,
                publicKeyPEM: teamKey.publicKey.pemRepresentation,
                clients: [
                    .init(clientID: bundleID),
                    .init(clientID: servicesID, redirectURIs: ["https://example.com/cb"] + webRedirectURIs),
                ]
            ),
            .init(
                teamID: "TEAMOTHER1",
                keyID: "KEYOTHER01",
                publicKeyPEM: P256.Signing.PrivateKey().publicKey.pemRepresentation,
                clients: [.init(clientID: otherTeamBundleID)]
            ),
        ])
        // The web harness's callbacks are on http://127.0.0.1, which Apple refuses: the emulator allows them here.
        emulatorConfiguration.allowLocalRedirectURIs = true
        let emulator = try await AppleIDEmulator(
            configuration: emulatorConfiguration,
            delivery: nil,
            now: { clock.now }
        )
        try await Application(router: emulator.router()).test(.live) { emulatorClient in
            try await body("http://127.0.0.1:\(try #require(emulatorClient.port))")
        }
    }

    // MARK: The emulator's device

    /// A native sign-in on a device: what the app receives from Apple.
    func appleCredential(
        _ email: String,
        clientID: String = bundleID,
        givenName: String? = nil,
        hideEmail: Bool = false,
        nonce: String? = nil,
        expiresIn: Int? = nil,
        scopes: [String]? = nil
    ) async throws -> [String: Any] {
        var request: [String: Any] = ["clientId": clientID, "email": email, "hideEmail": hideEmail]
        if let givenName {
            request["givenName"] = givenName
            request["familyName"] = "Appleseed"
        }
        if let nonce { request["nonce"] = nonce }
        if let expiresIn { request["expiresIn"] = expiresIn }
        if let scopes { request["scopes"] = scopes }
        return try await emulator("/emulator/native-sign-in", request)
    }

    /// Calls the emulator's control API.
    @discardableResult
    func emulator(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let transport = AsyncHTTPClientTransport()
        let base = try AppleBaseURL(emulatorURL)
        var request = HTTPRequest(method: .post, scheme: base.scheme, authority: base.authority, path: path)
        request.headerFields[.contentType] = "application/json"
        let answer = try await transport.send(
            request,
            body: Array(try JSONSerialization.data(withJSONObject: body)),
            timeout: .seconds(10)
        )
        return (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
    }

    /// The emulator's call log.
    func emulatorLog() async throws -> [[String: Any]] {
        let base = try AppleBaseURL(emulatorURL)
        let answer = try await AsyncHTTPClientTransport().send(
            HTTPRequest(method: .get, scheme: base.scheme, authority: base.authority, path: "/emulator/log"),
            body: nil,
            timeout: .seconds(10)
        )
        return (try JSONSerialization.jsonObject(with: Data(answer.body))) as? [[String: Any]] ?? []
    }

    // MARK: The server

    /// Calls the server with a JSON body and returns the status and the decoded JSON object.
    @discardableResult
    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: [String: Any]? = nil,
        rawBody: String? = nil,
        bearer: String? = nil
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        let body =
            try rawBody.map { ByteBuffer(string: $0) }
            ?? json.map { ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: $0)) }
        let response = try await server.execute(uri: path, method: method, headers: headers, body: body)
        let object =
            (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any] ?? [:]
        return (response.status, object, response.headers)
    }

    /// `GET path` on the metrics listener (with `metrics: true`).
    func metrics(
        _ path: String = "/metrics"
    ) async throws -> (status: HTTPResponse.Status, body: String, headers: HTTPFields) {
        let port = try await metricsPort.port()
        let answer = try await AsyncHTTPClientTransport().send(
            HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(port)", path: path),
            body: nil,
            timeout: .seconds(10)
        )
        return (answer.response.status, String(decoding: answer.body, as: UTF8.self), answer.response.headerFields)
    }

    /// Signs in natively with a fresh Apple credential and returns the server's answer.
    func signIn(
        _ email: String,
        givenName: String? = nil,
        sendName: Bool = true,
        hideEmail: Bool = false,
        scopes: [String]? = nil
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let credential = try await appleCredential(email, givenName: givenName, hideEmail: hideEmail, scopes: scopes)
        var request: [String: Any] = [
            "identityToken": credential["identityToken"] as? String ?? "",
            "authorizationCode": credential["authorizationCode"] as? String ?? "",
        ]
        if sendName, let fullName = credential["fullName"] as? [String: Any] {
            request["givenName"] = fullName["givenName"]
            request["familyName"] = fullName["familyName"]
        }
        let answer = try await call(.post, "/auth/apple/native", json: request)
        return (answer.status, answer.json)
    }
}

/// The port a listener bound, once it has: the metrics listener starts beside the server, not before it.
final class ListenerPort: Sendable {
    private let value = Mutex<Int?>(nil)

    func bound(_ port: Int?) {
        value.withLock { $0 = port }
    }

    /// The port, waiting up to 10 s for the listener.
    func port() async throws -> Int {
        for _ in 0..<400 {
            if let port = value.withLock({ $0 }) { return port }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw PortError()
    }
}

extension Dictionary where Key == String, Value == Any {
    /// `self["user"]` as an object.
    var user: [String: Any] { self["user"] as? [String: Any] ?? [:] }
    func string(_ key: String) -> String? { self[key] as? String }
}

/// The web-flow binding cookie of one browser profile (`siwa_flow` or `__Host-siwa_flow`).
final class BrowserCookieJar: Sendable {
    private let cookies = Mutex<[String: String]>([:])
    static let kept = ["siwa_flow", "__Host-siwa_flow"]

    func keep(from headers: HTTPFields) {
        for header in headers[values: .setCookie] {
            let pair = header.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            guard pair.count == 2 || pair.count == 1, Self.kept.contains(String(pair[0])) else { continue }
            let value = pair.count == 2 ? String(pair[1]) : ""
            let expired = header.contains("Max-Age=0")
            cookies.withLock { $0[String(pair[0])] = expired || value.isEmpty ? nil : value }
        }
    }

    var all: [String: String] { cookies.withLock { $0 } }

    func clear() { cookies.withLock { $0.removeAll() } }
}
