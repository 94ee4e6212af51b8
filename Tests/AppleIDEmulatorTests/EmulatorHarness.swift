import AppleIDEmulator
import AppleSignIn
import AppleSignInAsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaCLI
import SiwaTesting
import Synchronization
import Testing

/// An emulator running on a free loopback port, a notification receiver beside it, and siwa's own `AppleSignIn`
/// pieces pointed at it: the emulator is Apple, only the base URL differs.
struct EmulatorHarness: Sendable {
    static let teamID = "TEAMAAAAA1"
    static let keyID = "KEYAAAAAA1"
    static let otherTeamID = "TEAMBBBBB2"
    static let otherKeyID = "KEYBBBBBB2"
    static let bundleID: ClientID = "com.example.app"
    static let servicesID: ClientID = "com.example.web"
    static let otherTeamBundleID: ClientID = "org.other.app"
    static let redirectURI = "https://app.example.com/auth/apple/callback"

    let baseURL: AppleBaseURL
    let teamKey: P256.Signing.PrivateKey
    let otherTeamKey: P256.Signing.PrivateKey
    let clock: ManualWallClock
    let notifications: Received
    /// Where the clients' notifications go: the receiver's URL.
    let receiverURL: String
    let transport = AsyncHTTPClientTransport()

    /// Bodies the notification receiver got.
    final class Received: Sendable {
        let bodies = Mutex<[[UInt8]]>([])
        var all: [[UInt8]] { bodies.withLock { $0 } }
    }

    /// Runs `body` against a fresh emulator (and receiver). `stateFile` keeps state across two runs; `hostNames` are
    /// the emulator's names besides loopback.
    static func run(
        stateFile: String? = nil,
        hostNames: [String] = [],
        teamKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(),
        clock: ManualWallClock = ManualWallClock(Date()),
        _ body: @escaping @Sendable (EmulatorHarness) async throws -> Void
    ) async throws {
        let received = Received()
        let receiverRouter = Router()
        receiverRouter.post("/auth/apple/notifications") { request, _ -> HTTPResponse.Status in
            let bytes = try await request.body.collect(upTo: 64 * 1024)
            received.bodies.withLock { $0.append(Array(buffer: bytes)) }
            return .ok
        }
        let otherTeamKey = P256.Signing.PrivateKey()
        try await Application(router: receiverRouter).test(.live) { receiver in
            let receiverPort = try #require(receiver.port)
            let notificationURL = "http://127.0.0.1:\(receiverPort)/auth/apple/notifications"
            let configuration = EmulatorConfiguration(
                teams: [
                    .init(
                        teamID: teamID,
                        keyID: keyID,
                        publicKeyPEM: teamKey.publicKey.pemRepresentation,
                        clients: [
                            .init(clientID: bundleID.rawValue, notificationURL: notificationURL),
                            .init(
                                clientID: servicesID.rawValue,
                                redirectURIs: [redirectURI],
                                notificationURL: notificationURL
                            ),
                        ]
                    ),
                    .init(
                        teamID: otherTeamID,
                        keyID: otherKeyID,
                        publicKeyPEM: otherTeamKey.publicKey.pemRepresentation,
                        clients: [.init(clientID: otherTeamBundleID.rawValue)]
                    ),
                ],
                keyGracePeriod: 600,
                faultHangDuration: 1.5,
                hostNames: hostNames,
                allowLocalRedirectURIs: true
            )
            let emulator = try await AppleIDEmulator(
                configuration: configuration,
                delivery: HTTPNotificationDelivery(),
                stateFile: stateFile,
                now: { clock.now }
            )
            try await Application(router: emulator.router()).test(.live) { client in
                let port = try #require(client.port)
                try await body(
                    EmulatorHarness(
                        baseURL: try AppleBaseURL("http://localhost:\(port)"),
                        teamKey: teamKey,
                        otherTeamKey: otherTeamKey,
                        clock: clock,
                        notifications: received,
                        receiverURL: notificationURL
                    )
                )
            }
        }
    }

    // MARK: siwa's AppleSignIn, pointed at the emulator

    func configuration(
        teamID: String = teamID,
        keyID: String = keyID,
        key: P256.Signing.PrivateKey? = nil,
        bundleIDs: [ClientID] = [bundleID]
    ) throws -> AppleSignInConfiguration {
        try AppleSignInConfiguration(
            bundleIDs: bundleIDs,
            servicesID: bundleIDs.contains(Self.bundleID) ? Self.servicesID : nil,
            credentials: ClientSecretCredentials(
                teamID: try TeamID(teamID),
                keyID: try KeyID(keyID),
                key: AppleDeveloperKey(privateKey: key ?? teamKey)
            ),
            appleBaseURL: baseURL
        )
    }

    func keys(retry: RetryPolicy = RetryPolicy(maximumAttempts: 1, timeout: .seconds(5))) -> AppleKeyCache {
        AppleKeyCache(
            source: AppleKeysEndpoint(baseURL: baseURL, transport: transport, retryPolicy: retry),
            clock: clock,
            minimumRefetchInterval: 0
        )
    }

    func verifier(
        _ configuration: AppleSignInConfiguration? = nil,
        keys: AppleKeyCache? = nil
    ) throws
        -> IdentityTokenVerifier
    {
        IdentityTokenVerifier(
            configuration: try configuration ?? self.configuration(),
            keys: keys ?? self.keys(),
            clock: clock
        )
    }

    func client(
        _ configuration: AppleSignInConfiguration? = nil,
        signingKey: P256.Signing.PrivateKey? = nil,
        retry: RetryPolicy = RetryPolicy(maximumAttempts: 1, initialDelay: .zero, timeout: .seconds(5))
    ) throws -> AppleAPIClient {
        let configuration = try configuration ?? self.configuration()
        let credentials = ClientSecretCredentials(
            teamID: configuration.credentials!.teamID,
            keyID: configuration.credentials!.keyID,
            key: AppleDeveloperKey(privateKey: signingKey ?? configuration.credentials!.key.privateKey)
        )
        return AppleAPIClient(
            configuration: configuration,
            transport: transport,
            verifier: try verifier(configuration),
            clientSecrets: ClientSecretFactory(credentials: credentials, lifetime: 3600, clock: clock),
            retryPolicy: retry
        )
    }

    // MARK: Raw HTTP

    /// An answer of the emulator: the status, the body as text, `Location`, and every header.
    typealias Answer = (status: Int, body: String, location: String?, headers: HTTPFields)

    /// Sends a request to the emulator and returns the status, body and headers.
    func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        body: String? = nil,
        contentType: String = "application/json",
        headers: HTTPFields = [:]
    ) async throws -> Answer {
        var request = HTTPRequest(method: method, scheme: baseURL.scheme, authority: baseURL.authority, path: path)
        request.headerFields = headers
        if body != nil { request.headerFields[.contentType] = contentType }
        let answer = try await transport.send(request, body: body.map { Array($0.utf8) }, timeout: .seconds(10))
        return (
            answer.response.status.code, String(decoding: answer.body, as: UTF8.self),
            answer.response.headerFields[.location], answer.response.headerFields
        )
    }

    /// The emulator's own origin, as a browser on its pages names it.
    var origin: String { "\(baseURL.scheme)://\(baseURL.authority)" }

    /// Posts a console form as a browser on the console page does (`Origin` and `Sec-Fetch-Site` of the emulator's
    /// own page, unless others are given).
    func consoleForm(
        _ path: String,
        _ fields: [(String, String)],
        headers: HTTPFields? = nil
    ) async throws -> Answer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
        let browser: HTTPFields = [.origin: origin, HTTPField.Name("Sec-Fetch-Site")!: "same-origin"]
        return try await send(
            .post,
            "/console/\(path)",
            body: body,
            contentType: "application/x-www-form-urlencoded",
            headers: headers ?? browser
        )
    }

    /// A page of the emulator as a browser asks for it (`Accept: text/html`).
    func page(_ path: String) async throws -> Answer {
        try await send(.get, path, headers: [.accept: "text/html,application/xhtml+xml,*/*;q=0.8"])
    }

    /// Calls the control API with a JSON object and decodes a JSON object back.
    func control(_ path: String, _ object: [String: Any]) async throws -> (status: Int, json: [String: Any]) {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let answer = try await send(.post, "/emulator/\(path)", body: body)
        let json = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? [:]
        return (answer.status, json)
    }

    /// Sends a notification about `email`'s Apple ID to `clientID` (`POST /emulator/notifications`).
    func notify(
        _ email: String,
        _ type: String,
        clientID: ClientID = bundleID
    ) async throws -> (status: Int, json: [String: Any]) {
        try await control("notifications", ["clientId": clientID.rawValue, "email": email, "type": type])
    }

    /// A native sign-in on a "device".
    func nativeSignIn(
        _ email: String,
        clientID: ClientID = bundleID,
        givenName: String? = nil,
        hideEmail: Bool = false,
        nonce: String? = nil,
        expiresIn: Int? = nil,
        scopes: [String]? = nil
    ) async throws -> [String: Any] {
        var request: [String: Any] = ["clientId": clientID.rawValue, "email": email, "hideEmail": hideEmail]
        if let givenName {
            request["givenName"] = givenName
            request["familyName"] = "Appleseed"
        }
        if let nonce { request["nonce"] = nonce }
        if let expiresIn { request["expiresIn"] = expiresIn }
        if let scopes { request["scopes"] = scopes }
        let answer = try await control("native-sign-in", request)
        try #require(answer.status == 200, "native-sign-in answered \(answer.status)")
        return answer.json
    }

    /// The emulator's call log.
    func log() async throws -> [[String: Any]] {
        try await list("/emulator/log")
    }

    /// The notifications the emulator keeps for redelivery (`GET /emulator/notifications`).
    func sentNotifications() async throws -> [[String: Any]] {
        try await list("/emulator/notifications")
    }

    private func list(_ path: String) async throws -> [[String: Any]] {
        let answer = try await send(.get, path)
        return (try JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
    }
}
