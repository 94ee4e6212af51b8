import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// siwa as an OpenID provider for registered relying parties (OpenID Connect Core, RFC 6749, RFC 7636, RFC 7009):
/// discovery, `GET /oauth/authorize`, `POST /oauth/token`, `GET`/`POST /oauth/userinfo`, `GET`/`POST /oauth/logout`
/// and `POST /oauth/revoke`.
///
/// The user signs in with Apple through siwa's own web flow (`/auth/apple/authorize?returnUrl=`) and comes back to
/// the same authorization request; the code is kept in the store (by hash) so that any instance redeems it. The
/// tokens are siwa's own: a normal session (channel `oidc:<client_id>`, refresh tokens bound to the client), access
/// tokens and ID tokens signed by the keys at `/.well-known/jwks.json`, so Apple's account lifecycle ends relying
/// parties' sessions as it ends every other.
struct OpenIDController: RouteProvider {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let sessions: SessionService
    /// The server's audit log: sign-ins, refusals and consents.
    let audit: AuditLog
    let clock: any WallClock
    /// The consent form's anti-forgery tokens.
    let consentTokens: FormToken

    var openID: OpenIDConfiguration { configuration.openID }
    var issuer: AccessTokenIssuer { sessions.issuer }
    var cookies: SessionCookies { SessionCookies(configuration: configuration) }

    /// The `iss` of every token and of the discovery document: the configured public URL.
    var issuerURL: String { configuration.publicURL }

    /// The browser's siwa session, from its session cookie (`GET /oauth/authorize`, which changes nothing by it).
    static let browserSession = RouteAccess(
        credential: .session,
        presentations: [.cookie],
        required: false,
        originCheck: .never
    ).spending(.client)

    /// The `end_session_endpoint`'s: the browser's siwa session, from its session cookie. A relying party may post
    /// its sign-out request from its own site; the form that confirms a sign-out must come from this one, and is
    /// otherwise a page that says why.
    var endSessionAccess: RouteAccess {
        var access = Self.browserSession
        access.originCheck = .whenForm(
            "a form that confirms the sign-out (confirm=1)",
            field: "confirm",
            is: "1",
            limit: configuration.maximumBodySize
        )
        access.refusal = .page
        return access
    }

    /// `/oauth/userinfo`'s: a relying party's access token (or a siwa session) as a bearer token or, on a POST, the
    /// form's `access_token` (RFC 6750 §2.2); refused in RFC 6750's shape.
    static let userInfoAccess = RouteAccess(
        credential: .sessionOrRelyingParty,
        presentations: [.bearer, .formField],
        required: true,
        refusal: .bearerToken
    )

    func addRoutes(to routes: PolicedRoutes) {
        routes.get("/.well-known/openid-configuration", access: .open, use: discovery)
        routes.get("/oauth/authorize", access: Self.browserSession, use: authorize)
        routes.post("/oauth/authorize", access: Self.consentFormAccess, use: consent)
        routes.post("/oauth/token", access: .checkedByHandler(.clientCredentials), use: token)
        routes.get("/oauth/userinfo", access: Self.userInfoAccess, use: userInfo)
        routes.post("/oauth/userinfo", access: Self.userInfoAccess, use: userInfo)
        routes.get("/oauth/logout", access: endSessionAccess, use: logout)
        routes.post("/oauth/logout", access: endSessionAccess, use: logout)
        routes.post("/oauth/revoke", access: .checkedByHandler(.clientCredentials), use: revoke)
    }

    // MARK: Discovery

    /// The discovery document (OpenID Connect Discovery 1.0 §3), consistent with `/.well-known/jwks.json`: the same
    /// keys sign ID tokens and access tokens.
    struct Discovery: Encodable {
        var issuer: String
        var authorization_endpoint: String
        var token_endpoint: String
        var userinfo_endpoint: String
        var jwks_uri: String
        var end_session_endpoint: String
        var revocation_endpoint: String
        var scopes_supported: [String]
        var response_types_supported = ["code"]
        var response_modes_supported = ["query"]
        var grant_types_supported = OpenIDController.grants.map(\.type)
        var code_challenge_methods_supported = ["S256"]
        var subject_types_supported = ["public"]
        var id_token_signing_alg_values_supported = OpenIDClient.IDTokenSigningAlgorithm.allCases.map(\.rawValue)
        var token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        var revocation_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        var claims_supported = [
            "iss", "aud", "sub", "exp", "iat", "auth_time", "nonce", "amr", "azp", "sid", "at_hash", "email",
            "email_verified", "is_private_email", "name", "given_name", "family_name",
        ]
        var prompt_values_supported = ["none", "login", "consent"]
        var authorization_response_iss_parameter_supported = true
        var claims_parameter_supported = false
        var request_parameter_supported = false
        var request_uri_parameter_supported = false
        /// OpenID Connect Back-Channel Logout 1.0 §2.1: a client's `backchannelLogoutURI` is sent a logout token,
        /// always with `sid`.
        var backchannel_logout_supported = true
        var backchannel_logout_session_supported = true
    }

    var discoveryDocument: Discovery {
        let base = configuration.publicBaseURL
        return Discovery(
            issuer: issuerURL,
            authorization_endpoint: base + "/oauth/authorize",
            token_endpoint: base + "/oauth/token",
            userinfo_endpoint: base + "/oauth/userinfo",
            jwks_uri: base + "/.well-known/jwks.json",
            end_session_endpoint: base + "/oauth/logout",
            revocation_endpoint: base + "/oauth/revoke",
            scopes_supported: OpenIDConfiguration.supportedScopes
        )
    }

    @Sendable func discovery(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "application/json", .cacheControl: "public, max-age=300",
                .accessControlAllowOrigin: "*",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: try Self.json(discoveryDocument)))
        )
    }

    // MARK: Claims

    /// The user's claims that `scope` grants (OpenID Connect Core §5.4): `email` gives `email`, `email_verified`
    /// and `is_private_email`; `profile` gives `name`, `given_name` and `family_name` when known.
    static func userClaims(_ user: UserRecord, scope: Set<String>) -> [String: ClaimValue] {
        var claims: [String: ClaimValue] = ["sub": .string(user.id.description)]
        if scope.contains("email"), let email = user.email {
            claims["email"] = .string(email)
            claims["email_verified"] = .bool(user.emailVerified)
            claims["is_private_email"] = .bool(user.isPrivateEmail)
        }
        if scope.contains("profile") {
            if let name = user.fullName { claims["name"] = .string(name) }
            if let given = user.givenName { claims["given_name"] = .string(given) }
            if let family = user.familyName { claims["family_name"] = .string(family) }
        }
        return claims
    }

    /// A claim's value, as JSON.
    enum ClaimValue: Encodable, Equatable {
        case string(String)
        case bool(Bool)
        case integer(Int64)
        case strings([String])

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .strings(let value): try container.encode(value)
            }
        }
    }

    /// An ID token (OpenID Connect Core §2) for `user`, signed RS256 (or ES256 for a client that asks for it) by the
    /// current key: `iss`, `aud` and `azp` the
    /// client, `sub` the siwa user id, `iat`, `exp` (the access token's lifetime), `auth_time`, `nonce` when the
    /// request had one, `amr` `["apple"]`, `sid` the relying party's session, `at_hash`, and the scope's claims.
    func idToken(
        user: UserRecord,
        clientID: String,
        scope: Set<String>,
        nonce: String?,
        authTime: Date?,
        sessionID: SessionID,
        accessToken: String
    ) throws -> String {
        let now = Int64(clock.now.timeIntervalSince1970)
        var claims = Self.userClaims(user, scope: scope)
        claims["iss"] = .string(issuerURL)
        claims["aud"] = .string(clientID)
        claims["azp"] = .string(clientID)
        claims["iat"] = .integer(now)
        claims["exp"] = .integer(now + Int64(configuration.accessTokenLifetime))
        if let authTime { claims["auth_time"] = .integer(Int64(authTime.timeIntervalSince1970)) }
        if let nonce { claims["nonce"] = .string(nonce) }
        claims["amr"] = .strings(["apple"])
        claims["sid"] = .string(sessionID.description)
        // at_hash: the left half of the access token's SHA-256, base64url (§3.1.3.6).
        let digest = Array(SHA256.hash(data: Array(accessToken.utf8)))
        claims["at_hash"] = .string(Base64URL.encode(digest.prefix(16)))
        let payload = try Self.json(claims)
        switch openID.client(clientID)?.idTokenSigningAlgorithm ?? .rs256 {
        case .rs256: return try issuer.signRS256(payload)
        case .es256: return try issuer.sign(payload)
        }
    }

    // MARK: Helpers

    static func json(_ value: some Encodable) throws -> [UInt8] {
        try JSONAnswer.bytes(value)
    }

    /// A JSON answer that no cache keeps (token and userinfo answers).
    static func noStore(_ value: some Encodable) throws -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "application/json; charset=utf-8", .cacheControl: "no-store",
                HTTPField.Name("Pragma")!: "no-cache",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: try json(value)))
        )
    }

    /// The scope values of a space-separated `scope`.
    static func scopeSet(_ scope: String) -> Set<String> {
        Set(scope.split(separator: " ").map(String.init))
    }

    /// A scope in the canonical order of ``OpenIDConfiguration/supportedScopes``.
    static func scopeString(_ scope: Set<String>) -> String {
        OpenIDConfiguration.supportedScopes.filter(scope.contains).joined(separator: " ")
    }

    /// The SHA-256 of a code (the store keeps only that).
    static func hash(_ code: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(code.utf8)))
    }

    /// The channel of a relying party's sessions, for the console and the audit log.
    static func channel(_ clientID: String) -> SignInChannel {
        .openID(clientID)
    }
}
