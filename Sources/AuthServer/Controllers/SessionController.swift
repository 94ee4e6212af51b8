import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Native sign-in, server nonces, refresh, logout and the current user: the canonical API. HTTP only: sign-in is
/// ``SignInService``'s, sessions are ``SessionService``'s.
struct SessionController: RouteProvider {
    let configuration: AuthServerConfiguration
    let signIn: SignInService
    let sessions: SessionService
    /// The session cookies of client contracts that are on (ServiceStack's `ss-tok` / `ss-reftok`): a cookie logout
    /// ends and clears them too.
    var contractCookies: [(access: String, refresh: String)] = []

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

    var cookies: SessionCookies { SessionCookies(configuration: configuration) }

    func addRoutes(to routes: PolicedRoutes) {
        let (auth, api) = (routes.group("/auth"), routes.group("/api"))
        auth.post("/apple/native", access: .open, use: native)
        auth.post("/apple/nonce", access: .open, use: nonce)
        auth.post("/refresh", access: Self.refreshAccess, use: refresh)
        // A bearer token, the session cookies (cross-site checked) or a refresh token in the body.
        auth.post("/logout", access: Self.logoutAccess, use: logout)
        api.get("/me", access: .session(), use: me)
    }

    @Sendable func native(_ request: Request, context: SiwaRequestContext) async throws -> SessionResponse {
        let body = try await request.decodeJSON(NativeSignInRequest.self, limit: configuration.maximumBodySize)
        guard !body.identityToken.isEmpty else {
            throw AuthServerError.badRequest(AuthServerError.Code.missingField, "field 'identityToken' is required")
        }
        let signedIn = try await signIn.signIn(
            identityToken: body.identityToken,
            authorizationCode: body.authorizationCode,
            nonce: body.nonce.flatMap { $0.isEmpty ? nil : $0 },
            givenName: body.givenName,
            familyName: body.familyName,
            // A Services ID code (the Android web flow hands its callback to the app) is exchanged with the web
            // callback URL; bundle-id codes ignore it.
            redirectURI: configuration.webCallbackURL,
            origin: SessionOrigin(request, context: context, configuration: configuration)
        )
        let access = try signIn.accessToken(for: signedIn)
        // `user` as the user cache keeps it, encoded once.
        return SessionResponse(
            accessToken: access.token,
            expiresIn: access.expiresIn,
            refreshToken: signedIn.refreshToken,
            isNewUser: signedIn.isNewUser,
            userJSON: signedIn.userJSON
        )
    }

    @Sendable func nonce(_ request: Request, context: SiwaRequestContext) async throws -> NonceResponse {
        let issued = try await signIn.issueServerNonce()
        return NonceResponse(nonce: issued.nonce, expiresIn: issued.expiresIn)
    }

    /// `POST /auth/refresh`'s: the refresh token in the body, or the refresh cookie, which must come from this site.
    static let refreshAccess = {
        var access = RouteAccess.checkedByHandler(.refreshToken)
        access.originCheck = .anyCookie
        return access
    }()

    /// `POST /auth/logout`'s: a bearer token, or the session and refresh cookies, which must come from this site.
    static let logoutAccess = {
        var access = RouteAccess.session(required: false)
        access.originCheck = .anyCookie
        return access
    }()

    /// `POST /auth/refresh`: field `refreshToken`, or an empty body with the refresh cookie (its origin checked by the
    /// route's guard), which also sets both cookies.
    @Sendable func refresh(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        var request = request
        let body = try await request.collectBody(limit: configuration.maximumBodySize)
        if body.readableBytes == 0, let refreshToken = cookies.refreshToken(in: request) {
            let tokens = try await sessions.rotate(refreshToken: refreshToken, logger: context.logger)
            var response = try SessionResponse(tokens).response(from: request, context: context)
            cookies.set(tokens, on: &response)
            return response
        }
        let refreshToken = try request.decodeJSON(RefreshRequest.self, from: body).refreshToken
        let tokens = try await sessions.rotate(refreshToken: refreshToken, logger: context.logger)
        return try SessionResponse(tokens).response(from: request, context: context)
    }

    /// `POST /auth/logout`: a bearer token, field `refreshToken`, or, with an empty or form body, the session cookies
    /// (their origin checked by the route's guard). The cookies are cleared; a browser's form post is sent back to `/login`.
    @Sendable func logout(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        if request.bearerToken != nil {
            // The guard read the bearer token first: a session ends; anything else is refused.
            let claims = try context.requireSession().claims
            try await sessions.endSession(claims.sessionID, userID: claims.userID)
            return Response(status: .noContent)
        }
        var request = request
        let body = try await request.collectBody(limit: configuration.maximumBodySize)
        let isForm = request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false
        if hasSessionCookies(request), body.readableBytes == 0 || isForm {
            try await endCookieSession(request)
            var response =
                isForm
                ? Response(status: .seeOther, headers: [.location: "/login?signedout=1", .cacheControl: "no-store"])
                : Response(status: .noContent)
            cookies.clear(on: &response)
            for pair in contractCookies {
                for name in [pair.access, pair.refresh] where request.cookies[name] != nil {
                    response.setCookie(Cookie(name: name, value: "", maxAge: 0, path: "/", httpOnly: true))
                }
            }
            return response
        }
        guard let refreshToken = try request.decodeJSON(LogoutRequest.self, from: body).refreshToken,
            !refreshToken.isEmpty
        else {
            throw AuthServerError.badRequest(
                AuthServerError.Code.missingField,
                "send a bearer token or field 'refreshToken'"
            )
        }
        try await sessions.endSession(refreshToken: refreshToken)
        return Response(status: .noContent)
    }

    private func hasSessionCookies(_ request: Request) -> Bool {
        cookies.present(in: request)
            || contractCookies.contains { request.cookies[$0.access] != nil || request.cookies[$0.refresh] != nil }
    }

    /// Ends the sessions of the request's cookies (each access cookie's session and each refresh cookie's).
    func endCookieSession(_ request: Request) async throws {
        let pairs = [(cookies.sessionName, cookies.refreshName)] + contractCookies
        for (accessName, refreshName) in pairs {
            if let token = request.cookies[accessName]?.value, !token.isEmpty,
                let claims = try? sessions.authenticate(token)
            {
                try await sessions.endSession(claims.sessionID, userID: claims.userID)
            }
            if let refreshToken = request.cookies[refreshName]?.value, !refreshToken.isEmpty {
                try await sessions.endSession(refreshToken: refreshToken)
            }
        }
    }

    @Sendable func me(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let entry = try await sessions.accountEntry(context.requireSession().claims.userID)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: entry.json)
        )
    }
}

extension SessionResponse {
    init(_ tokens: SessionService.Tokens) {
        self.init(accessToken: tokens.accessToken, expiresIn: tokens.expiresIn, refreshToken: tokens.refreshToken ?? "")
    }
}
