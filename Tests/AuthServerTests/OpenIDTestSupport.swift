import AuthServer
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A relying party registered with the server under test.
struct RelyingParty: Sendable {
    var id: String
    /// The client secret (`nil` for a public client).
    var secret: String?
    var redirectURI: String
    var logoutURI: String

    static let a = RelyingParty(
        id: "rp-a",
        secret: "secret-of-a-0123456789-abcdefghijklmnop",
        redirectURI: "https://rp-a.example.com/callback",
        logoutURI: "https://rp-a.example.com/signed-out"
    )
    static let b = RelyingParty(
        id: "rp-b",
        secret: "secret-of-b-0123456789-abcdefghijklmnop",
        redirectURI: "https://rp-b.example.com/callback",
        logoutURI: "https://rp-b.example.com/signed-out"
    )
    static let publicApp = RelyingParty(
        id: "rp-app",
        secret: nil,
        redirectURI: "com.example.rp:/callback",
        logoutURI: "com.example.rp:/signed-out"
    )

    var client: OpenIDClient {
        OpenIDClient(
            id: id,
            secretHash: secret.map(OpenIDClient.hashSecret),
            redirectURIs: [redirectURI],
            postLogoutRedirectURIs: [logoutURI]
        )
    }

    /// A server configuration with the three relying parties (and `extra` ones).
    static func configuration(extra: [OpenIDClient] = []) -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.openID = OpenIDConfiguration(clients: [a.client, b.client, publicApp.client] + extra)
        return configuration
    }
}

/// A PKCE pair (RFC 7636): a verifier and its S256 challenge.
struct PKCE: Sendable {
    var verifier: String
    var challenge: String

    init() {
        verifier = PKCE.base64URL(Data((0..<48).map { _ in UInt8.random(in: .min ... .max) }))
        challenge = PKCE.base64URL(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
}

/// What a browser holds after an OpenID sign-in: siwa's session cookies.
struct BrowserSession: Sendable {
    var cookies: [String: String]
}

extension ServerHarness {
    /// `/oauth/authorize?…` for `party`, with these parameters (a `nil` value leaves the parameter out).
    static func authorizePath(
        _ party: RelyingParty,
        scope: String = "openid email profile",
        state: String? = "state-123",
        nonce: String? = "nonce-456",
        pkce: PKCE? = nil,
        redirectURI: String? = nil,
        extra: [(String, String)] = []
    ) -> String {
        var fields: [(String, String)] = [
            ("response_type", "code"), ("client_id", party.id), ("redirect_uri", redirectURI ?? party.redirectURI),
            ("scope", scope),
        ]
        if let state { fields.append(("state", state)) }
        if let nonce { fields.append(("nonce", nonce)) }
        if let pkce { fields += [("code_challenge", pkce.challenge), ("code_challenge_method", "S256")] }
        return "/oauth/authorize?" + formEncode(fields + extra)
    }

    /// The whole first sign-in of a browser through a relying party: authorize, siwa's web sign-in at the emulator,
    /// back to authorize, and the redirect to the relying party. Returns that last redirect's query and the browser's
    /// session.
    /// A public client's consent page is allowed on the way, unless `allowConsent` is `false`: then the page's answer
    /// is returned as it is (its `location` empty and `query` empty when it is the page).
    func openIDSignIn(
        _ path: String,
        email: String = "rp-user@example.com",
        givenName: String = "Jane",
        allowConsent: Bool = true
    ) async throws -> (query: [String: String], location: String, browser: BrowserSession) {
        let (answer, session) = try await openIDSignInPage(path, email: email, givenName: givenName)
        var redirect = answer
        if answer.status == .ok, allowConsent {
            redirect = try await decide("allow", on: answer, browser: session)
            try #require(redirect.status == .seeOther, "consent: \(redirect.status) \(redirect.body)")
        } else if answer.status == .ok {
            return ([:], "", session)
        } else {
            try #require(answer.status == .found, "authorize with a session: \(answer.status) \(answer.body)")
        }
        let location = try #require(redirect.location)
        return (Self.query(of: location), location, session)
    }

    /// The whole first sign-in of a browser through a relying party up to siwa's answer to the authorization request
    /// with a session: the redirect to the client, or a public client's consent page.
    func openIDSignInPage(
        _ path: String,
        email: String = "rp-user@example.com",
        givenName: String = "Jane"
    ) async throws -> (answer: WebPage, browser: BrowserSession) {
        let start = try await browser(.get, path)
        try #require(start.status == .seeOther, "authorize without a session: \(start.status) \(start.body)")
        let signIn = try #require(start.location)
        #expect(signIn.hasPrefix("/auth/apple/authorize?returnUrl="))
        let toApple = try await browser(.get, signIn)
        try #require(toApple.status == .found, "web sign-in start: \(toApple.body)")
        let post = try await consent(at: try #require(toApple.location), email: email, givenName: givenName)
        let callback = try await postCallback(post)
        try #require(callback.status == .seeOther, "callback: \(callback.body)")
        let back = try #require(callback.location)
        #expect(back.hasPrefix("/oauth/authorize?"), "back to the same authorization request")
        let session = BrowserSession(cookies: [
            "siwa_session": try #require(callback.cookie("siwa_session")),
            "siwa_refresh": try #require(callback.cookie("siwa_refresh")),
        ])
        return (try await browser(.get, back, cookies: session.cookies), session)
    }

    /// This site's origin as a browser names it: the public URL (the configuration's default without `web`).
    var siteOrigin: String { serverURL.isEmpty ? "http://localhost:8080" : serverURL }

    /// Answers a consent page as a browser would: posts its form with `decision` (and the hidden fields `replaced`
    /// names changed), from `origin` (`nil`: this site; empty: no `Origin` header).
    func decide(
        _ decision: String,
        on page: WebPage,
        browser session: BrowserSession,
        origin: String? = nil,
        replacing replaced: [String: String] = [:]
    ) async throws -> WebPage {
        var fields = try page.hiddenFields().map { name, value in (name, replaced[name] ?? value) }
        fields.append(("decision", decision))
        var headers: HTTPFields = [:]
        let origin = origin ?? siteOrigin
        if !origin.isEmpty { headers[.origin] = origin }
        return try await browser(.post, "/oauth/authorize", form: fields, cookies: session.cookies, headers: headers)
    }

    /// Another authorization by a browser that has a session: the redirect's query.
    func authorize(_ path: String, browser session: BrowserSession) async throws -> [String: String] {
        let answer = try await browser(.get, path, cookies: session.cookies)
        try #require(answer.status == .found, "authorize: \(answer.status) \(answer.body)")
        return Self.query(of: try #require(answer.location))
    }

    /// A request to the token (or revocation) endpoint as a relying party's server sends it.
    func tokenRequest(
        _ fields: [(String, String)],
        basic: (id: String, secret: String)? = nil,
        path: String = "/oauth/token"
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let basic {
            headers[.authorization] = "Basic " + Data("\(basic.id):\(basic.secret)".utf8).base64EncodedString()
        }
        let response = try await server.execute(
            uri: path,
            method: .post,
            headers: headers,
            body: ByteBuffer(string: Self.formEncode(fields))
        )
        let object =
            (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any] ?? [:]
        return (response.status, object, response.headers)
    }

    /// Redeems a code as `party` (client_secret_basic for a confidential client, `client_id` alone for a public one).
    func redeem(
        _ code: String,
        _ party: RelyingParty,
        verifier: String? = nil,
        redirectURI: String? = nil
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        var fields = [("grant_type", "authorization_code"), ("code", code)]
        fields.append(("redirect_uri", redirectURI ?? party.redirectURI))
        if let verifier { fields.append(("code_verifier", verifier)) }
        if party.secret == nil { fields.append(("client_id", party.id)) }
        return try await tokenRequest(fields, basic: party.secret.map { (party.id, $0) })
    }

    /// Refreshes as `party`.
    func refresh(
        _ refreshToken: String,
        _ party: RelyingParty
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        try await tokenRequest(
            [("grant_type", "refresh_token"), ("refresh_token", refreshToken)],
            basic: party.secret.map { (party.id, $0) }
        )
    }

    /// The claims of a JWT, unverified (the tests verify signatures with jwt-kit and PyJWT).
    static func claims(of jwt: String) throws -> [String: Any] {
        let parts = jwt.split(separator: ".")
        try #require(parts.count == 3)
        var base64 = String(parts[1]).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
