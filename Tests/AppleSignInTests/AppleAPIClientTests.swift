import AppleSignIn
import Crypto
import HTTPTypes
import SiwaTesting
import Synchronization
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Apple REST API client")
struct AppleAPIClientTests {
    static let bundleID: ClientID = "com.example.app"
    static let servicesID: ClientID = "com.example.web"
    static let redirectURI = "https://example.com/auth/apple/callback"
    static let user = "001234.abcdef0123456789abcdef0123456789.1234"
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    let apple: TestAppleKeys
    let clock = ManualWallClock(now)
    let transport = StubTransport()

    init() throws {
        apple = try TestAppleKeys(count: 1)
    }

    private func client() throws -> AppleAPIClient {
        let credentials = ClientSecretCredentials(
            teamID: try TeamID("ABCDE12345"),
            keyID: try KeyID("KEY0123456"),
            key: AppleDeveloperKey(privateKey: P256.Signing.PrivateKey())
        )
        let configuration = try AppleSignInConfiguration(
            bundleIDs: [Self.bundleID],
            servicesID: Self.servicesID,
            credentials: credentials,
            appleBaseURL: try AppleBaseURL("http://127.0.0.1:9090")
        )
        let keys = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()), clock: clock)
        return AppleAPIClient(
            configuration: configuration,
            transport: transport,
            verifier: IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock),
            clientSecrets: ClientSecretFactory(credentials: credentials, lifetime: 86_400, clock: clock),
            retryPolicy: RetryPolicy(maximumAttempts: 3, initialDelay: .zero)
        )
    }

    /// An identity token for `aud`, as the app would present it, signed by `keys` (Apple's by default).
    private func idToken(aud: ClientID, sub: String = user, keys: TestAppleKeys? = nil) throws -> String {
        try (keys ?? apple).identityToken(TestClaims(aud: aud.rawValue, sub: sub, now: Self.now))
    }

    /// Apple's answer to a code exchange, carrying `idToken`.
    private static func tokenAnswer(idToken: String) -> HTTPTransportResponse {
        StubTransport.json(
            .ok,
            #"{"access_token":"a.1","token_type":"Bearer","expires_in":3600,"refresh_token":"r.1","#
                + #""id_token":"\#(idToken)"}"#
        )
    }

    /// Answers every call to `path` with `status` and `body`.
    private func answer(_ path: String, _ status: HTTPResponse.Status, _ body: String) {
        transport.on(path) { _ in StubTransport.json(status, body) }
    }

    /// Answers calls to `path` with the scripted results in turn (the last one repeats).
    private func script(_ path: String, _ results: [Result<HTTPTransportResponse, AppleSignInError>]) {
        let calls = Atomic<Int>(0)
        transport.on(path) { _ in
            let index = calls.add(1, ordering: .relaxed).oldValue
            return try results[min(index, results.count - 1)].get()
        }
    }

    /// Checks what every call to Apple has in common.
    private func expectFormPost(_ recorded: StubTransport.Recorded, path: String) {
        #expect(recorded.request.method == .post)
        #expect(recorded.request.scheme == "http")
        #expect(recorded.request.authority == "127.0.0.1:9090")
        #expect(recorded.request.path == path)
        #expect(recorded.request.headerFields[.contentType] == "application/x-www-form-urlencoded")
    }

    // MARK: - Code exchange

    @Test func nativeCodeIsExchangedWithTheBundleIDAndNoRedirectURI() async throws {
        let returned = try idToken(aud: Self.bundleID)
        transport.on("/auth/token") { _ in Self.tokenAnswer(idToken: returned) }
        let response = try await client().exchange(code: "c.1", clientID: Self.bundleID, redirectURI: Self.redirectURI)

        let requests = transport.requests(to: "/auth/token")
        try #require(requests.count == 1)
        expectFormPost(requests[0], path: "/auth/token")
        let fields = requests[0].formFields
        #expect(fields["grant_type"] == "authorization_code")
        #expect(fields["code"] == "c.1")
        #expect(fields["client_id"] == Self.bundleID.rawValue)
        #expect(fields["redirect_uri"] == nil)
        #expect(Set(fields.keys) == ["grant_type", "code", "client_id", "client_secret"])
        let secret = try ClientSecretJWT(try #require(fields["client_secret"]))
        #expect(secret.claims.sub == Self.bundleID.rawValue)
        #expect(secret.claims.iss == "ABCDE12345")

        #expect(response.accessToken == "a.1")
        #expect(response.refreshToken == "r.1")
        #expect(response.expiresIn == 3600)
        #expect(response.idToken == returned)
        #expect(response.verifiedIDToken?.sub == AppleUserID(Self.user))
        #expect(response.verifiedIDToken?.aud == Self.bundleID)
    }

    @Test func webCodeIsExchangedWithTheServicesIDAndRedirectURI() async throws {
        let client = try client()
        let presented = try await client.verifier.verify(try idToken(aud: Self.servicesID))
        let returned = try idToken(aud: Self.servicesID)
        transport.on("/auth/token") { _ in Self.tokenAnswer(idToken: returned) }
        let response = try await client.exchange(code: "c.2", for: presented, redirectURI: Self.redirectURI)

        let fields = try #require(transport.requests(to: "/auth/token").first).formFields
        #expect(fields["client_id"] == Self.servicesID.rawValue)
        #expect(fields["redirect_uri"] == Self.redirectURI)
        #expect(fields["code"] == "c.2")
        #expect(try ClientSecretJWT(try #require(fields["client_secret"])).claims.sub == Self.servicesID.rawValue)
        #expect(response.verifiedIDToken?.sub == presented.sub)
    }

    @Test func webCodeWithoutRedirectURIIsAConfigurationError() async throws {
        let client = try client()
        let presented = try await client.verifier.verify(try idToken(aud: Self.servicesID))
        let error = await #expect(throws: AppleSignInError.invalidConfiguration) {
            try await client.exchange(code: "c.3", for: presented)
        }
        #expect(error?.reason.contains("redirectURI") == true)
        #expect(transport.requests.isEmpty)
    }

    @Test func codeOfAnotherUserIsRefused() async throws {
        let client = try client()
        let presented = try await client.verifier.verify(try idToken(aud: Self.bundleID))
        let otherUsers = try idToken(aud: Self.bundleID, sub: "009999.ffffffffffffffffffffffffffffffff.9999")
        transport.on("/auth/token") { _ in Self.tokenAnswer(idToken: otherUsers) }
        await #expect(throws: AppleSignInError.subjectMismatch) {
            try await client.exchange(code: "c.4", for: presented)
        }
    }

    @Test func returnedIDTokenIsVerified() async throws {
        // Same kid as Apple's key, another key: the id_token in the answer must not be trusted.
        let forged = try idToken(aud: Self.bundleID, keys: try TestAppleKeys(count: 1))
        transport.on("/auth/token") { _ in Self.tokenAnswer(idToken: forged) }
        await #expect(throws: AppleSignInError.badSignature) {
            try await client().exchange(code: "c.5", clientID: Self.bundleID, redirectURI: nil)
        }
    }

    @Test(arguments: [
        ("invalid_client", AppleSignInError.invalidClient),
        ("invalid_grant", .invalidGrant),
        ("invalid_request", .invalidRequest),
        ("unauthorized_client", .unauthorizedClient),
        ("unsupported_grant_type", .unsupportedGrantType),
        ("invalid_scope", .invalidScope),
        ("something_else", .unexpectedResponse),
    ])
    func appleOAuthErrorsMapToCodes(error: String, expected: AppleSignInError) async throws {
        answer("/auth/token", .badRequest, #"{"error":"\#(error)","error_description":"described"}"#)
        let thrown = await #expect(throws: expected) {
            try await client().exchange(code: "c.6", clientID: Self.bundleID, redirectURI: nil)
        }
        #expect(thrown?.appleDescription == "described")
        #expect(transport.requests.count == 1)
    }

    @Test func invalidClientNamesTheClientID() async throws {
        answer("/auth/token", .badRequest, #"{"error":"invalid_client"}"#)
        let error = await #expect(throws: AppleSignInError.invalidClient) {
            try await client().exchange(code: "c.7", clientID: Self.bundleID, redirectURI: nil)
        }
        #expect(error?.reason.contains(Self.bundleID.rawValue) == true)
        #expect(error?.appleDescription == nil)
    }

    @Test func errorAnswerWithoutAnErrorCodeIsUnexpected() async throws {
        answer("/auth/token", .badRequest, "<html>Bad Request</html>")
        await #expect(throws: AppleSignInError.unexpectedResponse) {
            try await client().exchange(code: "c.8", clientID: Self.bundleID, redirectURI: nil)
        }
    }

    @Test func codeExchangeIsNotRetriedOnServerError() async throws {
        answer("/auth/token", .internalServerError, "{}")
        await #expect(throws: AppleSignInError.appleServerError) {
            try await client().exchange(code: "c.9", clientID: Self.bundleID, redirectURI: nil)
        }
        #expect(transport.requests(to: "/auth/token").count == 1)
    }

    @Test func codeExchangeIsNotRetriedOnTimeout() async throws {
        script("/auth/token", [.failure(AppleSignInError(.timeout, "no answer"))])
        await #expect(throws: AppleSignInError.timeout) {
            try await client().exchange(code: "c.10", clientID: Self.bundleID, redirectURI: nil)
        }
        #expect(transport.requests(to: "/auth/token").count == 1)
    }

    // MARK: - Refresh-token validation

    @Test func validRefreshToken() async throws {
        answer("/auth/token", .ok, #"{"access_token":"a.2","token_type":"Bearer","expires_in":3600}"#)
        let outcome = try await client().validate(refreshToken: "r.1", clientID: Self.bundleID)
        guard case .valid(let response) = outcome else {
            Issue.record("expected .valid, got \(outcome)")
            return
        }
        #expect(response.accessToken == "a.2")
        #expect(response.refreshToken == nil)

        let requests = transport.requests(to: "/auth/token")
        try #require(requests.count == 1)
        expectFormPost(requests[0], path: "/auth/token")
        let fields = requests[0].formFields
        #expect(fields["grant_type"] == "refresh_token")
        #expect(fields["refresh_token"] == "r.1")
        #expect(fields["client_id"] == Self.bundleID.rawValue)
        #expect(try ClientSecretJWT(try #require(fields["client_secret"])).claims.sub == Self.bundleID.rawValue)
    }

    @Test func revokedRefreshToken() async throws {
        answer("/auth/token", .badRequest, #"{"error":"invalid_grant"}"#)
        let outcome = try await client().validate(refreshToken: "r.1", clientID: Self.bundleID)
        guard case .revoked = outcome else {
            Issue.record("expected .revoked, got \(outcome)")
            return
        }
        #expect(transport.requests.count == 1)
    }

    @Test func otherValidationErrorsAreNotRevocation() async throws {
        answer("/auth/token", .badRequest, #"{"error":"invalid_client"}"#)
        await #expect(throws: AppleSignInError.invalidClient) {
            try await client().validate(refreshToken: "r.1", clientID: Self.bundleID)
        }
    }

    @Test func validationIsRetriedOnServerErrors() async throws {
        let ok = StubTransport.json(.ok, #"{"access_token":"a.3","token_type":"Bearer","expires_in":3600}"#)
        let failing = StubTransport.json(.internalServerError, "{}")
        script("/auth/token", [.success(failing), .success(StubTransport.json(.serviceUnavailable, "")), .success(ok)])
        let outcome = try await client().validate(refreshToken: "r.1", clientID: Self.bundleID)
        guard case .valid(let response) = outcome else {
            Issue.record("expected .valid, got \(outcome)")
            return
        }
        #expect(response.accessToken == "a.3")
        #expect(transport.requests(to: "/auth/token").count == 3)
    }

    @Test func validationGivesUpAfterTheLastAttempt() async throws {
        answer("/auth/token", .internalServerError, "{}")
        await #expect(throws: AppleSignInError.appleServerError) {
            try await client().validate(refreshToken: "r.1", clientID: Self.bundleID)
        }
        #expect(transport.requests(to: "/auth/token").count == 3)
    }

    // MARK: - Revocation

    @Test(arguments: [TokenTypeHint.refreshToken, .accessToken])
    func revokeSendsTheTokenAndItsHint(hint: TokenTypeHint) async throws {
        answer("/auth/revoke", .ok, "")
        try await client().revoke(token: "t.1", hint: hint, clientID: Self.servicesID)

        let requests = transport.requests(to: "/auth/revoke")
        try #require(requests.count == 1)
        expectFormPost(requests[0], path: "/auth/revoke")
        let fields = requests[0].formFields
        #expect(Set(fields.keys) == ["client_id", "client_secret", "token", "token_type_hint"])
        #expect(fields["client_id"] == Self.servicesID.rawValue)
        #expect(fields["token"] == "t.1")
        #expect(fields["token_type_hint"] == hint.rawValue)
        #expect(try ClientSecretJWT(try #require(fields["client_secret"])).claims.sub == Self.servicesID.rawValue)
    }

    @Test func revokeHintsAreApplesNames() {
        #expect(TokenTypeHint.refreshToken.rawValue == "refresh_token")
        #expect(TokenTypeHint.accessToken.rawValue == "access_token")
    }

    @Test func revokeIsRetriedOnServerErrors() async throws {
        answer("/auth/revoke", .internalServerError, "{}")
        await #expect(throws: AppleSignInError.appleServerError) {
            try await client().revoke(token: "t.1", clientID: Self.bundleID)
        }
        #expect(transport.requests(to: "/auth/revoke").count == 3)
    }

    @Test func revokeIsRetriedAfterATimeout() async throws {
        let ok = HTTPTransportResponse(status: .ok, body: [])
        script("/auth/revoke", [.failure(AppleSignInError(.timeout, "no answer")), .success(ok)])
        try await client().revoke(token: "t.1", clientID: Self.bundleID)
        #expect(transport.requests(to: "/auth/revoke").count == 2)
    }

    @Test func revokeIsRetriedAfterATransportFailure() async throws {
        struct ConnectionReset: Error {}
        let calls = Atomic<Int>(0)
        transport.on("/auth/revoke") { _ in
            if calls.add(1, ordering: .relaxed).newValue == 1 { throw ConnectionReset() }
            return HTTPTransportResponse(status: .ok, body: [])
        }
        try await client().revoke(token: "t.1", clientID: Self.bundleID)
        #expect(transport.requests(to: "/auth/revoke").count == 2)
    }

    @Test func revokeIsNotRetriedOnAnOAuthError() async throws {
        answer("/auth/revoke", .badRequest, #"{"error":"invalid_client"}"#)
        await #expect(throws: AppleSignInError.invalidClient) {
            try await client().revoke(token: "t.1", clientID: Self.bundleID)
        }
        #expect(transport.requests(to: "/auth/revoke").count == 1)
    }

    // MARK: - Base URL

    @Test func callsGoToTheConfiguredBaseURLWithItsPathPrefix() async throws {
        let credentials = ClientSecretCredentials(
            teamID: try TeamID("ABCDE12345"),
            keyID: try KeyID("KEY0123456"),
            key: AppleDeveloperKey(privateKey: P256.Signing.PrivateKey())
        )
        let configuration = try AppleSignInConfiguration(
            bundleIDs: [Self.bundleID],
            credentials: credentials,
            appleBaseURL: try AppleBaseURL("https://gateway.example.com/apple")
        )
        let keys = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()), clock: clock)
        let client = AppleAPIClient(
            configuration: configuration,
            transport: transport,
            verifier: IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock),
            clientSecrets: ClientSecretFactory(credentials: credentials, lifetime: 86_400, clock: clock)
        )
        answer("/apple/auth/revoke", .ok, "")
        try await client.revoke(token: "t.1", clientID: Self.bundleID)
        let request = try #require(transport.requests.first).request
        #expect(request.scheme == "https")
        #expect(request.authority == "gateway.example.com")
        #expect(request.path == "/apple/auth/revoke")
    }
}
