import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird
import Logging

/// Browser sessions: the session cookie authenticates like a bearer token; state-changing cookie requests pass the
/// CSRF check.
extension SessionController {
    var cookies: SessionCookies { SessionCookies(configuration: configuration) }

    /// `POST /auth/refresh`: field `refreshToken` as before, or an empty body with the refresh cookie (CSRF-checked),
    /// which also sets both cookies.
    @Sendable func refreshByTokenOrCookie(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        var request = request
        let body = try await collect(&request)
        if body.readableBytes == 0, cookies.refreshToken(in: request) != nil {
            try CSRFCheck.verify(request, configuration: configuration)
            let session = try await rotateCookies(request, logger: context.logger)
            var response = try SessionResponse(
                accessToken: session.accessToken,
                expiresIn: session.expiresIn,
                refreshToken: session.refreshToken
            ).response(from: request, context: context)
            cookies.set(accessToken: session.accessToken, refreshToken: session.refreshToken, on: &response)
            return response
        }
        return try await refresh(request, context: context).response(from: request, context: context)
    }

    /// `POST /auth/logout`: a bearer token or field `refreshToken` as before, or, with an empty or form body, the
    /// session cookies (CSRF-checked). The cookies are cleared; a browser's form post is sent back to `/login`.
    @Sendable func logoutByTokenOrCookie(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        guard request.bearerToken == nil, cookies.present(in: request) else {
            return try await logout(request, context: context)
        }
        var request = request
        let body = try await collect(&request)
        let isForm = request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false
        guard body.readableBytes == 0 || isForm else { return try await logout(request, context: context) }
        try CSRFCheck.verify(request, configuration: configuration)
        try await endCookieSession(request)
        var response =
            isForm
            ? Response(status: .seeOther, headers: [.location: "/login?signedout=1", .cacheControl: "no-store"])
            : Response(status: .noContent)
        cookies.clear(on: &response)
        return response
    }

    private func collect(_ request: inout Request) async throws -> ByteBuffer {
        do {
            return try await request.collectBody(upTo: configuration.maximumBodySize)
        } catch {
            throw AuthServerError(
                .contentTooLarge,
                "body_too_large",
                "the request body is larger than \(configuration.maximumBodySize) bytes"
            )
        }
    }

    /// Authenticates a request by its bearer token or, when it has none, by its session cookie. A cookie-authenticated
    /// request whose method changes state (anything but GET and HEAD) must pass ``CSRFCheck``.
    /// - Returns: the access token's claims and whether they came from the cookie.
    /// - Throws: ``AuthServerError`` 401 when neither authenticates, 403 `csrf_check_failed`.
    func authenticateRequest(_ request: Request) throws -> (claims: AccessTokenClaims, byCookie: Bool) {
        if let bearer = request.bearerToken { return (try authenticate(bearer), false) }
        guard let token = cookies.accessToken(in: request) else {
            throw AuthServerError.unauthorized(
                "missing_token",
                "send 'Authorization: Bearer <access token>' or the session cookie"
            )
        }
        if request.method != .get && request.method != .head {
            try CSRFCheck.verify(request, configuration: configuration)
        }
        return (try authenticate(token), true)
    }

    /// Rotates the refresh cookie: new tokens in both cookies. The caller has run the CSRF check when needed.
    func rotateCookies(
        _ request: Request,
        logger: Logger
    ) async throws -> (accessToken: String, expiresIn: Int, refreshToken: String) {
        guard let refreshToken = cookies.refreshToken(in: request) else {
            throw AuthServerError.unauthorized(
                "missing_refresh_token",
                "send field 'refreshToken' or the refresh cookie"
            )
        }
        return try await rotate(refreshToken: refreshToken, logger: logger)
    }

    /// Ends the sessions of the request's cookies (the access cookie's session and the refresh cookie's).
    func endCookieSession(_ request: Request) async throws {
        let now = clock.now
        var sessions: Set<SessionID> = []
        if let token = cookies.accessToken(in: request), let claims = issuer.verify(token) {
            sessions.insert(claims.sessionID)
        }
        if let refreshToken = cookies.refreshToken(in: request),
            let session = try await store.session(refreshTokenHash: RefreshTokens.hash(refreshToken))
        {
            sessions.insert(session.sessionID)
        }
        for sessionID in sessions {
            try await store.revokeSession(sessionID, now: now)
            revocations.add(sessionID, at: now)
        }
    }
}
