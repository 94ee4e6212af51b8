import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Native sign-in, server nonces, refresh, logout and the current user: the canonical API.
struct SessionController: Sendable {
    let configuration: AuthServerConfiguration
    let signIn: SignInService
    let store: any AccountStore
    let issuer: AccessTokenIssuer
    let revocations: RevocationList
    let users: UserCache
    let clock: any WallClock
    /// Validates overdue Apple refresh tokens on refresh (`nil`: no Apple credentials, nothing to validate).
    var appleConsent: AppleConsentChecker? = nil

    struct NativeSignInRequest: Decodable {
        var identityToken: String
        var authorizationCode: String?
        var nonce: String?
        var givenName: String?
        var familyName: String?
    }

    struct RefreshRequest: Decodable {
        var refreshToken: String
    }

    struct LogoutRequest: Decodable {
        var refreshToken: String?
    }

    struct NonceResponse: ResponseEncodable {
        var nonce: String
        var expiresIn: Int
    }

    func addRoutes(to auth: RouterGroup<SiwaRequestContext>, api: RouterGroup<SiwaRequestContext>) {
        auth.post("/apple/native", use: native)
        auth.post("/apple/nonce", use: nonce)
        auth.post("/refresh", use: refreshByTokenOrCookie)
        auth.post("/logout", use: logoutByTokenOrCookie)
        api.get("/me", use: me)
    }

    @Sendable func native(_ request: Request, context: SiwaRequestContext) async throws -> SessionResponse {
        let body = try await request.decodeJSON(NativeSignInRequest.self, limit: configuration.maximumBodySize)
        guard !body.identityToken.isEmpty else {
            throw AuthServerError.badRequest("missing_field", "field 'identityToken' is required")
        }
        let signedIn = try await signIn.signIn(
            identityToken: body.identityToken,
            authorizationCode: body.authorizationCode,
            nonce: body.nonce.flatMap { $0.isEmpty ? nil : $0 },
            givenName: body.givenName,
            familyName: body.familyName,
            // A Services ID code (the Android web flow hands its callback to the app) is exchanged with the web
            // callback URL; bundle-id codes ignore it.
            redirectURI: configuration.webCallbackURL
        )
        return SessionResponse(
            accessToken: signedIn.accessToken,
            expiresIn: signedIn.expiresIn,
            refreshToken: signedIn.refreshToken,
            isNewUser: signedIn.isNewUser,
            user: UserResponse(signedIn.user)
        )
    }

    @Sendable func nonce(_ request: Request, context: SiwaRequestContext) async throws -> NonceResponse {
        let issued = try await signIn.issueServerNonce()
        return NonceResponse(nonce: issued.nonce, expiresIn: issued.expiresIn)
    }

    @Sendable func refresh(_ request: Request, context: SiwaRequestContext) async throws -> SessionResponse {
        let body = try await request.decodeJSON(RefreshRequest.self, limit: configuration.maximumBodySize)
        let session = try await rotate(refreshToken: body.refreshToken, logger: context.logger)
        return SessionResponse(
            accessToken: session.accessToken,
            expiresIn: session.expiresIn,
            refreshToken: session.refreshToken
        )
    }

    /// Rotates a refresh token; reuse of a rotated token revokes its whole session.
    func rotate(
        refreshToken: String,
        logger: Logger
    ) async throws -> (accessToken: String, expiresIn: Int, refreshToken: String) {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512 else {
            signIn.metrics?.refresh(.invalid)
            throw AuthServerError.unauthorized("invalid_refresh_token", "the refresh token is not valid")
        }
        try await requireAppleConsentBeforeRotating(presentedHash: RefreshTokens.hash(refreshToken), logger: logger)
        let next = RefreshTokens.generate()
        let now = clock.now
        let outcome = try await store.rotateRefreshToken(
            presentedHash: RefreshTokens.hash(refreshToken),
            next: RefreshTokenRecord(
                hash: RefreshTokens.hash(next),
                sessionID: SessionID(),
                userID: UserID(),
                issuedAt: now,
                expiresAt: now.addingTimeInterval(configuration.refreshTokenLifetime)
            ),
            now: now
        )
        switch outcome {
        case .rotated(let sessionID, let userID):
            signIn.metrics?.refresh(.rotated)
            try await requireAppleConsentAfterRotating(userID: userID, logger: logger)
            let access = try issuer.issue(userID: userID, sessionID: sessionID)
            return (access.token, access.expiresIn, next)
        case .reused(let sessionID, let userID):
            signIn.metrics?.refresh(.reused)
            revocations.add(sessionID, at: now)
            logger.warning(
                "refresh token reused: session revoked",
                metadata: ["user": "\(userID)", "session": "\(sessionID)"]
            )
            throw AuthServerError.unauthorized(
                "refresh_token_reused",
                "this refresh token was already used; the session has been revoked, sign in again"
            )
        case .revoked(_, let userID):
            signIn.metrics?.refresh(.revoked)
            if let ended = try await appleConsentEndedError(userID: userID) { throw ended }
            throw AuthServerError.unauthorized("refresh_token_revoked", "the session has ended; sign in again")
        case .expired:
            signIn.metrics?.refresh(.expired)
            throw AuthServerError.unauthorized("refresh_token_expired", "the refresh token has expired; sign in again")
        case .notFound:
            signIn.metrics?.refresh(.invalid)
            throw AuthServerError.unauthorized("invalid_refresh_token", "the refresh token is not valid")
        }
    }

    @Sendable func logout(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let now = clock.now
        if let bearer = request.bearerToken {
            let claims = try authenticate(bearer)
            try await store.revokeSession(claims.sessionID, now: now)
            revocations.add(claims.sessionID, at: now)
        } else {
            let body = try await request.decodeJSON(LogoutRequest.self, limit: configuration.maximumBodySize)
            guard let refreshToken = body.refreshToken, !refreshToken.isEmpty else {
                throw AuthServerError.badRequest("missing_field", "send a bearer token or field 'refreshToken'")
            }
            if let session = try await store.session(refreshTokenHash: RefreshTokens.hash(refreshToken)) {
                try await store.revokeSession(session.sessionID, now: now)
                revocations.add(session.sessionID, at: now)
            }
        }
        return Response(status: .noContent)
    }

    @Sendable func me(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let claims = try authenticateRequest(request).claims
        guard let entry = try await users.entry(id: claims.userID, store: store) else {
            throw AuthServerError.unauthorized("unknown_user", "the account no longer exists")
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: entry.json)
        )
    }

    /// Checks an access token with no database read: signature and claims (cached), then the revocation list.
    func authenticate(_ token: String) throws -> AccessTokenClaims {
        guard let claims = issuer.verify(token) else {
            throw AuthServerError.unauthorized(
                "invalid_token",
                "the access token is malformed, expired or not signed by this server"
            )
        }
        switch revocations.status(of: claims.sessionID, userID: claims.userID) {
        case .active: break
        case .sessionRevoked:
            throw AuthServerError.unauthorized("session_revoked", "the session of this access token has ended")
        case .accountDeleted:
            throw AuthServerError.unauthorized("account_deleted", "the account of this access token was deleted")
        }
        return claims
    }
}
