import AccountStore
import AppleIDEmulator
import AppleSignIn
import AppleSignInAsyncHTTPClient
import AppleSignInClient
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// siwa's real server on a loopback port, with the Apple ID emulator as Apple, driven by `SiwaClient` over
/// `URLSession`: the approach of `AuthServerTests/ServerHarness.swift`, with the client on the other end.
struct ClientHarness: Sendable {
    static let teamID = "TEAMCLI001"
    static let keyID = "KEYCLI0001"
    static let bundleID = "com.example.app"

    /// What `ASAuthorizationAppleIDCredential` gives an app, as the emulator's device produced it.
    struct AppleCredential: Sendable {
        var identityToken: String
        var authorizationCode: String
        /// Apple's user id (`sub`).
        var user: String
        var fullName: PersonNameComponents?
        var email: String?
    }

    /// siwa's base URL, `http://127.0.0.1:<port>`.
    let baseURL: URL
    let emulatorURL: String
    let server: any TestClientProtocol
    let store: any AccountStore
    let clock: ManualWallClock

    /// Runs `body` with an emulator and a server built by `buildApplication`, access tokens living
    /// `accessTokenLifetime` seconds of the harness's clock.
    static func run(
        accessTokenLifetime: TimeInterval = 900,
        _ body: @escaping @Sendable (ClientHarness) async throws -> Void
    ) async throws {
        let teamKey = P256.Signing.PrivateKey()
        let clock = ManualWallClock(Date())
        let store = InMemoryAccountStore()
        let emulator = try await AppleIDEmulator(
            configuration: EmulatorConfiguration(teams: [
                .init(
                    teamID: teamID,
                    keyID: keyID,
                    publicKeyPEM: teamKey.publicKey.pemRepresentation,
                    clients: [.init(clientID: bundleID)]
                )
            ]),
            delivery: nil,
            now: { clock.now }
        )
        try await Application(router: emulator.router()).test(.live) { emulatorClient in
            let emulatorURL = "http://127.0.0.1:\(try #require(emulatorClient.port))"
            let apple = try AppleSignInConfiguration(
                bundleIDs: [ClientID(bundleID)],
                credentials: ClientSecretCredentials(
                    teamID: try TeamID(teamID),
                    keyID: try KeyID(keyID),
                    key: AppleDeveloperKey(privateKey: teamKey)
                ),
                appleBaseURL: try AppleBaseURL(emulatorURL)
            )
            let app = try await buildApplication(
                configuration: AuthServerConfiguration(
                    accessTokenLifetime: accessTokenLifetime,
                    authRateLimit: nil,
                    storeRefreshInterval: .milliseconds(200)
                ),
                apple: apple,
                store: store,
                transport: AsyncHTTPClientTransport(),
                sealer: DataSealer(key: SymmetricKey(size: .bits256)),
                clock: clock,
                port: 0
            )
            try await app.test(.live) { server in
                let port = try #require(server.port)
                let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
                try await body(
                    ClientHarness(
                        baseURL: baseURL,
                        emulatorURL: emulatorURL,
                        server: server,
                        store: store,
                        clock: clock
                    )
                )
            }
        }
    }

    /// A client of this server over a fresh `URLSession`, recording its calls.
    func client(
        tokenStore: any TokenStore = InMemoryTokenStore(),
        transport: RecordingTransport = RecordingTransport()
    ) -> SiwaClient {
        SiwaClient(baseURL: baseURL, tokenStore: tokenStore, transport: transport)
    }

    // MARK: The emulator's device

    /// A native sign-in on a device. The name and email come only with the first authorization of `email`'s Apple ID.
    func appleCredential(
        _ email: String,
        givenName: String? = nil,
        nonce: String? = nil,
        expiresIn: Int? = nil
    ) async throws -> AppleCredential {
        var request: [String: Any] = ["clientId": Self.bundleID, "email": email]
        if let givenName {
            request["givenName"] = givenName
            request["familyName"] = "Appleseed"
        }
        if let nonce { request["nonce"] = nonce }
        if let expiresIn { request["expiresIn"] = expiresIn }
        let answer = try await emulator("/emulator/native-sign-in", request)
        var fullName: PersonNameComponents?
        if let name = answer["fullName"] as? [String: Any] {
            var components = PersonNameComponents()
            components.givenName = name["givenName"] as? String
            components.familyName = name["familyName"] as? String
            fullName = components
        }
        return AppleCredential(
            identityToken: try #require(answer["identityToken"] as? String),
            authorizationCode: try #require(answer["authorizationCode"] as? String),
            user: try #require(answer["user"] as? String),
            fullName: fullName,
            email: answer["email"] as? String
        )
    }

    /// Calls the emulator's control API.
    private func emulator(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let base = try AppleBaseURL(emulatorURL)
        var request = HTTPRequest(method: .post, scheme: base.scheme, authority: base.authority, path: path)
        request.headerFields[.contentType] = "application/json"
        let answer = try await AsyncHTTPClientTransport().send(
            request,
            body: Array(try JSONSerialization.data(withJSONObject: body)),
            timeout: .seconds(10)
        )
        return (try JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
    }

    // MARK: The server, bypassing the client

    /// Calls the server directly (another device, a thief) and returns the status and the decoded JSON object.
    @discardableResult
    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: [String: Any]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let response = try await server.execute(
            uri: path,
            method: method,
            headers: [.contentType: "application/json"],
            body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        )
        let object =
            (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any] ?? [:]
        return (response.status, object)
    }
}

/// The live `URLSessionTransport`, recording every call's path and status; it can answer some calls with a
/// synthetic error instead of sending them, and hold refreshes until enough 401s have arrived.
struct RecordingTransport: SiwaClientTransport {
    /// One call: the URL path and the status answered.
    struct Call: Sendable, Equatable {
        var path: String
        var status: Int
    }

    /// The shared, mutable part.
    actor Log {
        private(set) var calls: [Call] = []
        private var faults: [String: [Int]] = [:]

        func record(_ call: Call) {
            calls.append(call)
        }

        /// Answers the next `count` calls to `path` with `status` without sending them.
        func fail(_ path: String, status: Int, count: Int = 1) {
            faults[path, default: []].append(contentsOf: repeatElement(status, count: count))
        }

        func takeFault(_ path: String) -> Int? {
            faults[path]?.isEmpty == false ? faults[path]?.removeFirst() : nil
        }

        /// Waits until `count` calls were answered 401, or five seconds passed.
        func waitForUnauthorized(_ count: Int) async {
            let deadline = ContinuousClock.now.advanced(by: .seconds(5))
            while calls.count(where: { $0.status == 401 }) < count, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }

        private var arrivals = 0
        private var heldAnUnauthorized = false

        /// Counts a request to `/api/me` and waits until `count` have arrived, or five seconds passed.
        func arriveAtBarrier(_ count: Int) async {
            arrivals += 1
            let deadline = ContinuousClock.now.advanced(by: .seconds(5))
            while arrivals < count, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }

        /// True for the first 401 only.
        func takeFirstUnauthorized() -> Bool {
            defer { heldAnUnauthorized = true }
            return !heldAnUnauthorized
        }

        /// Waits until a refresh was answered 200, or five seconds passed.
        func waitForRefresh() async {
            let deadline = ContinuousClock.now.advanced(by: .seconds(5))
            while count("/auth/refresh", status: 200) == 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }

        func count(_ path: String, status: Int? = nil) -> Int {
            calls.count { $0.path == path && (status == nil || $0.status == status) }
        }
    }

    let log = Log()
    /// `POST /auth/refresh` is held until this many calls were answered 401.
    let holdRefreshUntilUnauthorized: Int
    /// Requests to `/api/me` are held until this many have arrived (so all carry the same token).
    let apiBarrier: Int
    /// The first 401 is handed back only after a refresh was answered (it arrives "late").
    let delayFirstUnauthorizedUntilRefreshed: Bool
    private let live: URLSessionTransport

    init(
        holdRefreshUntilUnauthorized: Int = 0,
        apiBarrier: Int = 0,
        delayFirstUnauthorizedUntilRefreshed: Bool = false
    ) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 32
        self.live = URLSessionTransport(session: URLSession(configuration: configuration))
        self.holdRefreshUntilUnauthorized = holdRefreshUntilUnauthorized
        self.apiBarrier = apiBarrier
        self.delayFirstUnauthorizedUntilRefreshed = delayFirstUnauthorizedUntilRefreshed
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let url = try #require(request.url)
        if let status = await log.takeFault(url.path) {
            await log.record(Call(path: url.path, status: status))
            let body = Data(#"{"error":"unavailable","message":"the service is briefly unavailable"}"#.utf8)
            let response = try #require(
                HTTPURLResponse(
                    url: url,
                    statusCode: status,
                    httpVersion: "HTTP/1.1",
                    headerFields: ["Content-Type": "application/json"]
                )
            )
            return (body, response)
        }
        if url.path == "/auth/refresh" { await log.waitForUnauthorized(holdRefreshUntilUnauthorized) }
        if url.path == "/api/me" { await log.arriveAtBarrier(apiBarrier) }
        let (data, response) = try await live.send(request)
        await log.record(Call(path: url.path, status: response.statusCode))
        if response.statusCode == 401, delayFirstUnauthorizedUntilRefreshed, await log.takeFirstUnauthorized() {
            await log.waitForRefresh()
        }
        return (data, response)
    }
}

extension SiwaClient {
    /// Signs in with everything a device credential holds and no nonce.
    func signIn(_ credential: ClientHarness.AppleCredential) async throws -> Session {
        try await signIn(
            identityToken: credential.identityToken,
            authorizationCode: credential.authorizationCode,
            fullName: credential.fullName,
            email: credential.email,
            nonce: nil
        )
    }
}
