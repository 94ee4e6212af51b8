import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// ServiceStack's client contract (`AppleAuthProvider` with `JwtAuthProvider`, as its Flutter and SwiftUI samples and
/// its `JsonServiceClient`s call it), over siwa's one sign-in and session implementation.
struct ServiceStackController: RouteProvider {
    let configuration: AuthServerConfiguration
    let signIn: SignInService
    let sessions: SessionService
    let web: WebController
    /// The accounts, for the samples' admin dump (`GET /users`).
    var store: any AccountStore { signIn.store }
    var compatibility: CompatibilityConfiguration { configuration.compatibility }

    /// The web flow's `redirect_uri` on this contract: ServiceStack's provider URL, which Apple's `form_post` reaches.
    var callbackURL: String { configuration.publicBaseURL + "/auth/apple" }

    static let tokenCookie = "ss-tok"
    static let refreshCookie = "ss-reftok"

    /// ServiceStack's `AuthenticateResponse`, camelCase.
    struct AuthenticateResponse: Encodable {
        var userId: String
        var sessionId: String
        var userName: String
        var displayName: String
        var bearerToken: String?
        var refreshToken: String?
        var profileUrl: String
        var roles: [String]
        var permissions: [String]
    }

    struct AccessTokenResponse: Encodable {
        var accessToken: String
    }

    struct HelloResponse: Encodable {
        var result: String
    }

    /// One row of the samples' `/users` dump.
    struct UserDump: Encodable {
        var id: String
        var userName: String
        var email: String?
        var displayName: String
        var firstName: String?
        var lastName: String?
        var emailVerified: Bool
        var isPrivateEmail: Bool
        var emailForwarding: Bool
        var roles: [String]
        var createdDate: Date
        var modifiedDate: Date
        var providerOAuthAccess: [ProviderDetails]
    }

    struct ProviderDetails: Encodable {
        var provider = "apple"
        var userId: String
        var clientId: String
        var email: String?
    }

    /// The samples' shape (`results`, `total`: every account), plus `next`, the cursor of the next page when there is
    /// one.
    struct UsersResponse: Encodable {
        var results: [UserDump]
        var total: Int
        var next: String?
    }

    /// `Authenticate`'s: the current session when one comes along (a sign-in ignores it). Asking who is signed in
    /// changes nothing, so it needs no cross-site check (ServiceStack's clients send no `Origin`); a sign-out by
    /// cookie must come from this site, and a sign-in that sets cookies checks the lenient way itself.
    var authenticateAccess: RouteAccess {
        let cookieNames = [
            Self.tokenCookie, Self.refreshCookie, SessionCookies(configuration: configuration).sessionName,
        ]
        let limit = configuration.maximumBodySize
        return RouteAccess(
            credential: .session,
            presentations: [.bearer, .cookie],
            required: false,
            originCheck: .when("a sign-out (provider logout) with a session or refresh cookie") { request in
                let cookies = request.cookies
                guard cookieNames.contains(where: { cookies[$0] != nil }) else { return false }
                let body: ByteBuffer
                do {
                    body = try await request.collectBody(upTo: limit)
                } catch {
                    throw CompatRequestBody.tooLarge(limit)
                }
                // A body that does not parse signs nobody out: the handler refuses it.
                let fields = try? CompatRequestBody.parse(
                    Array(body.readableBytesView),
                    contentType: request.headers[.contentType]
                )
                return Self.provider(fields, request)?.lowercased() == "logout"
            },
            refusal: .serviceStack
        )
    }

    /// The GET routes that may sign out (`GET /auth/logout`, `GET /auth?provider=logout`): a link or a redirect on any
    /// page sends the user's cookies with them, so a request by cookie that the browser marks as another site's, or
    /// that names another origin, is refused; ServiceStack's clients, which name no origin, sign out. They spend, since
    /// they may sign out.
    var signOutByGet: RouteAccess {
        var access = authenticateAccess.spending(.client)
        access.originCheck = .anyCookieAlsoByGet
        return access
    }

    /// `GetAccessToken`'s: the refresh token in the body, or the `ss-reftok` cookie, which a request that names an
    /// origin must send from this site (ServiceStack's .NET client keeps the cookie and sends no `Origin`).
    static let getAccessTokenAccess = {
        var access = RouteAccess.checkedByHandler(.refreshToken, refusal: .serviceStack)
        access.originCheck = .anyCookieNamingAnOrigin
        return access
    }()

    func addRoutes(to routes: PolicedRoutes) {
        let auth = routes.group("/auth")
        let authenticate = authenticateAccess
        let session = RouteAccess.session(refusal: .serviceStack)
        auth.post("/apple", access: authenticate, use: self.authenticate)
        auth.get("/apple", access: RouteAccess.open.spending(.flowStart), use: startWebFlow)
        auth.post("", access: authenticate, use: self.authenticate)
        // By GET, ServiceStack's clients ask for the current session (`client.Get(new Authenticate())`) or sign out
        // (`provider=logout`); they sign in by POST only. A GET's body is never read, and the route spends, since it
        // may sign out.
        auth.get("", access: signOutByGet, use: self.authenticate)
        auth.get("/logout", access: signOutByGet, use: logout)
        routes.post("/api/Authenticate", access: authenticate, use: self.authenticate)
        routes.get("/api/Authenticate", access: signOutByGet, use: self.authenticate)
        routes.post("/json/reply/Authenticate", access: authenticate, use: self.authenticate)
        for path in ["/api/GetAccessToken", "/access-token", "/json/reply/GetAccessToken"] {
            routes.post(path, access: Self.getAccessTokenAccess, use: getAccessToken)
        }
        routes.get("/hello/secure/{name}", access: session, use: helloSecure)
        routes.get("/hello/secure", access: session, use: helloSecure)
        routes.get("/api/HelloSecure", access: session, use: helloSecure)
        routes.post("/api/HelloSecure", access: session, use: helloSecure)
        // An admin route: behind the admin networks; the samples' `Admin` role is the handler's check.
        var contractAdmin = session
        contractAdmin.credential = .contractAdmin
        routes.get("/users", access: contractAdmin, use: usersDump)
    }

    // MARK: Routes

    /// `Authenticate`: with `provider` "apple" a sign-in with the identity token (by POST only); with no provider the
    /// current session (bearer or `ss-tok` cookie), else 401; with `logout`, a sign-out.
    @Sendable func authenticate(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let bytes: [UInt8]
        if request.method == .get || request.method == .head {
            // A GET carries its fields in the query; an identity token in a GET's body is never read.
            bytes = []
        } else {
            do {
                bytes = try await CompatRequestBody.collect(request, limit: configuration.maximumBodySize)
            } catch let error as AuthServerError {
                return ServiceStackError(error).response
            }
        }
        // Apple's `form_post` to the provider URL ends a web sign-in started by `GET /auth/apple`.
        if request.uri.path.hasSuffix("/auth/apple"), CompatRequestBody.isForm(request.headers[.contentType]) {
            let names = Set(CompatRequestBody.formFields(bytes).map(\.0))
            if names.contains("state"), names.contains("id_token") || names.contains("error") {
                do {
                    return await web.completeFlow(
                        request,
                        body: bytes,
                        servicesID: try web.servicesID(),
                        redirectURI: callbackURL,
                        context: context
                    )
                } catch let error as AuthServerError {
                    return ServiceStackError(error).response
                }
            }
        }
        return await Self.answering(request) {
            let body = try CompatRequestBody.parse(bytes, contentType: request.headers[.contentType])
            guard let provider = Self.provider(body, request), !provider.isEmpty else {
                return try await currentSession(request, context: context)
            }
            if provider.lowercased() == "logout" { return try await endSession(request, context: context) }
            guard provider.lowercased() == "apple" else {
                throw ServiceStackError.validation(
                    "NotSupported",
                    field: "Provider",
                    "provider \(LoggedText.quoted(provider, limit: 32)) is not supported; use 'apple'"
                )
            }
            guard request.method == .post else {
                // No identity token in a URL, where logs and browser histories keep it.
                throw ServiceStackError(
                    .methodNotAllowed,
                    "MethodNotAllowed",
                    "sign in with POST, the token in the body"
                )
            }
            return try await signIn(request, body: body, context: context)
        }
    }

    private func signIn(
        _ request: Request,
        body: CompatRequestBody,
        context: SiwaRequestContext
    ) async throws -> Response {
        guard let identityToken = body.string("accessToken") else {
            throw ServiceStackError.validation(
                "NotEmpty",
                field: "AccessToken",
                "'AccessToken' must hold the Apple identity token"
            )
        }
        let meta = body.objectOrJSONText("meta")
        func field(_ name: String) -> String? { meta?.string(name) ?? body.string(name) }
        let setsCookies = compatibility.serviceStackTokenCookies || body.bool("useTokenCookie")
        if setsCookies {
            // A cross-site form must not plant the attacker's session in a victim's browser (login CSRF).
            try CSRFCheck.refuseForeignOrigin(request, configuration: configuration)
        }
        let signedIn = try await signIn.signIn(
            identityToken: identityToken,
            authorizationCode: field("authorizationCode"),
            nonce: field("nonce"),
            givenName: field("givenName"),
            familyName: field("familyName"),
            flow: .compat,
            contract: .serviceStack,
            origin: SessionOrigin(request, context: context, configuration: configuration)
        )
        let bearerToken = try signIn.accessToken(for: signedIn).token
        var response = try CompatResponse.json(
            answer(
                user: signedIn.user,
                sessionID: signedIn.sessionID.description,
                bearerToken: bearerToken,
                refreshToken: signedIn.refreshToken,
            )
        )
        if setsCookies {
            setTokenCookies(on: &response, bearer: bearerToken, refresh: signedIn.refreshToken)
        }
        return response
    }

    /// The current session. The bearer token is answered back only when the client sent it as a header: a token
    /// from the HttpOnly `ss-tok` cookie stays out of reach of page scripts.
    private func currentSession(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let claims: AccessTokenClaims
        do {
            claims = try context.requireSession().claims
        } catch {
            throw ServiceStackError.notAuthenticated
        }
        let user = try await sessions.account(claims.userID)
        return try CompatResponse.json(
            answer(
                user: user,
                sessionID: claims.sessionID.description,
                bearerToken: request.bearerToken,
                refreshToken: nil,
            )
        )
    }

    /// `GET /auth/logout`: ServiceStack's sign-out.
    @Sendable func logout(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering(request) { try await endSession(request, context: context) }
    }

    /// Ends the session of the bearer token or the `ss-tok` / `ss-reftok` cookies, and clears the cookies, as
    /// ServiceStack's `Authenticate {provider: "logout"}` and `/auth/logout` do. Nothing to end is not an error.
    private func endSession(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        // Signing out by cookie from another site was refused by the route's guard (``authenticateAccess``).
        if let claims = context.session { try await sessions.endSession(claims.sessionID, userID: claims.userID) }
        if let refreshToken = request.cookies[Self.refreshCookie]?.value, !refreshToken.isEmpty {
            try await sessions.endSession(refreshToken: refreshToken)
        }
        var response = try CompatResponse.json(EmptyResponse())
        for name in [Self.tokenCookie, Self.refreshCookie] where request.cookies[name] != nil {
            response.setCookie(cookie(name, "", maxAge: 0))
        }
        return response
    }

    struct EmptyResponse: Encodable {}

    /// `GET /auth/apple?ReturnUrl=…` starts the web flow (also `ReturnUrl=android:<package>`, the
    /// `FlutterSignInWithApple` option); Apple's `form_post` comes back to `POST /auth/apple`.
    @Sendable func startWebFlow(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let returnURL = ["ReturnUrl", "returnUrl", "continue", "redirect"].lazy.compactMap { query[$0] }.first
        do {
            return try await web.startFlow(
                request,
                returnURL: returnURL.map(String.init) ?? "/",
                redirectURI: callbackURL
            )
        } catch let error as AuthServerError {
            return ServiceStackError(error).response
        } catch {
            // The database unreachable: 503 in ServiceStack's shape too.
            return ServiceStackError(AuthServerError.unexpected(error)).response
        }
    }

    /// `GetAccessToken`: a new bearer token for the refresh token (body or `ss-reftok` cookie); the refresh token stays
    /// valid, as ServiceStack's clients keep it.
    @Sendable func getAccessToken(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering(request) {
            let body = try await CompatRequestBody.read(request, limit: sessions.configuration.maximumBodySize)
            let fromCookie = request.cookies[Self.refreshCookie]?.value
            guard let refreshToken = body.string("refreshToken") ?? fromCookie.flatMap({ $0.isEmpty ? nil : $0 })
            else {
                throw ServiceStackError.validation(
                    "NotEmpty",
                    field: "RefreshToken",
                    "'RefreshToken' is required (or the ss-reftok cookie)"
                )
            }
            let access = try await sessions.accessToken(forRefreshToken: refreshToken, contract: .serviceStack)
            var response = try CompatResponse.json(AccessTokenResponse(accessToken: access.accessToken))
            if body.bool("useTokenCookie") || fromCookie != nil || compatibility.serviceStackTokenCookies {
                response.setCookie(cookie(Self.tokenCookie, access.accessToken))
            }
            return response
        }
    }

    /// The samples' test service: `Secure {Name}!` when authenticated.
    @Sendable func helloSecure(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering(request) {
            let claims = try authenticated(context)
            _ = try await sessions.account(claims.userID)
            var name = context.parameters.get("name") ?? request.uri.queryParameters["name"].map(String.init)
            if request.method == .post {
                // Read even when the query names someone: a body that is not a JSON object or a form is refused.
                let body = try await CompatRequestBody.read(request, limit: sessions.configuration.maximumBodySize)
                if name == nil { name = body.string("name") }
            }
            return try CompatResponse.json(HelloResponse(result: "Secure \(name ?? "")!"))
        }
    }

    /// The samples' admin dump of users and their Apple details, a page at a time; `Admin` role only.
    @Sendable func usersDump(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering(request) {
            let claims = try authenticated(context)
            let caller = try await sessions.account(claims.userID)
            guard compatibility.isAdmin(caller) else {
                throw ServiceStackError(.forbidden, "Forbidden", "Invalid Role")
            }
            // One page of the console's store query (newest first), never every account at once: `take` (1–200,
            // 100 by default) and `after`, the previous page's `next`.
            let take =
                try RequestFields.integer(
                    request.uri.queryParameters["take"].map(String.init),
                    "take",
                    1...RequestFields.maximumLimit
                ) ?? 100
            let cursor = try RequestFields.cursor(request)
            let page = try await RequestFields.refusingForeignCursors {
                try await store.searchUsers("", limit: take, after: cursor)
            }
            let total = try await store.accountTotals(createdSince: []).total
            return try CompatResponse.json(
                UsersResponse(results: page.items.map(userDump), total: total, next: page.next?.description)
            )
        }
    }

    // MARK: Helpers

    private func authenticated(_ context: SiwaRequestContext) throws -> AccessTokenClaims {
        switch context.authentication {
        case .session(let claims, _): return claims
        case .relyingParty: throw ServiceStackError(AuthServerError.relyingPartyToken)
        case .refused(let error):
            throw ServiceStackError(
                error.status,
                error.status == .forbidden ? "Forbidden" : "Unauthorized",
                error.message
            )
        case nil: throw ServiceStackError.notAuthenticated
        }
    }

    private func answer(
        user: UserRecord,
        sessionID: String,
        bearerToken: String?,
        refreshToken: String?
    ) -> AuthenticateResponse {
        return AuthenticateResponse(
            userId: user.id.description,
            sessionId: sessionID,
            userName: user.email ?? user.id.description,
            displayName: user.displayName ?? "",
            bearerToken: bearerToken,
            refreshToken: refreshToken,
            profileUrl: Self.profileImage,
            roles: roles(of: user),
            permissions: []
        )
    }

    private func roles(of user: UserRecord) -> [String] {
        compatibility.isAdmin(user) ? ["Admin"] : []
    }

    private func userDump(_ user: UserRecord) -> UserDump {
        return UserDump(
            id: user.id.description,
            userName: user.email ?? user.id.description,
            email: user.email,
            displayName: user.displayName ?? "",
            firstName: user.givenName,
            lastName: user.familyName,
            emailVerified: user.emailVerified,
            isPrivateEmail: user.isPrivateEmail,
            emailForwarding: user.emailForwarding,
            roles: roles(of: user),
            createdDate: user.createdAt,
            modifiedDate: user.updatedAt,
            providerOAuthAccess: [
                ProviderDetails(userId: user.appleUserID.rawValue, clientId: user.clientID.rawValue, email: user.email)
            ]
        )
    }

    private func setTokenCookies(on response: inout Response, bearer: String, refresh: String) {
        response.setCookie(cookie(Self.tokenCookie, bearer))
        response.setCookie(cookie(Self.refreshCookie, refresh))
    }

    private func cookie(_ name: String, _ value: String, maxAge: Int? = nil) -> Cookie {
        Cookie(
            name: name,
            value: value,
            maxAge: maxAge ?? Int(configuration.refreshTokenLifetime),
            path: "/",
            secure: configuration.usesSecureCookies,
            httpOnly: true,
            sameSite: .lax
        )
    }

    /// `Authenticate`'s `provider`: the body's, else the query's.
    static func provider(_ body: CompatRequestBody?, _ request: Request) -> String? {
        body?.string("provider") ?? request.uri.queryParameters["provider"].map(String.init)
    }

    /// Runs a route and answers any error in ServiceStack's shape.
    static func answering(_ request: Request, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as ServiceStackError {
            return error.response
        } catch let error as AuthServerError {
            return ServiceStackError(error).response
        } catch {
            return ServiceStackError(AuthServerError.unexpected(error)).response
        }
    }

    /// A neutral avatar (ServiceStack answers a profile URL for every user); inline, no external asset.
    static let profileImage =
        "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Ccircle cx='16' "
        + "cy='12' r='6' fill='%23888'/%3E%3Cpath d='M4 30c0-7 5-11 12-11s12 4 12 11z' fill='%23888'/%3E%3C/svg%3E"
}

extension RouteAccess.Refusal {
    /// ServiceStack's `ResponseStatus` envelope (``ServiceStackError``); no credential at all is its "Not Authenticated".
    static let serviceStack = RouteAccess.Refusal(name: "ServiceStack's ResponseStatus") { error, _ in
        error.code == AuthServerError.Code.missingToken
            ? ServiceStackError.notAuthenticated.response : ServiceStackError(error).response
    }
}

/// An error in ServiceStack's camelCase shape:
/// `{"responseStatus": {"errorCode", "message", "errors": [{"errorCode", "fieldName", "message"}]}}`.
struct ServiceStackError: Error {
    let status: HTTPResponse.Status
    let errorCode: String
    let message: String
    var fieldErrors: [(errorCode: String, fieldName: String, message: String)] = []
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ errorCode: String, _ message: String) {
        self.status = status
        self.errorCode = errorCode
        self.message = message
    }

    /// ServiceStack's error body: `{"responseStatus": {"errorCode", "message", "errors"?}}`.
    struct Envelope: Encodable {
        struct Status: Encodable {
            var errorCode: String
            var message: String
            var errors: [FieldError]?
        }

        struct FieldError: Encodable {
            var errorCode: String
            var fieldName: String
            var message: String
        }

        var responseStatus: Status
    }

    /// siwa's error with ServiceStack's error codes: `Unauthorized` for 401s, the HTTP reason otherwise, and siwa's
    /// code in the field error so that nothing is lost.
    init(_ error: AuthServerError) {
        let code: String
        switch error.status {
        case .unauthorized: code = "Unauthorized"
        case .forbidden: code = "Forbidden"
        case .badRequest: code = "ArgumentException"
        case .tooManyRequests: code = "TooManyRequests"
        case .serviceUnavailable: code = "ServiceUnavailable"
        case .contentTooLarge: code = "RequestEntityTooLarge"
        default: code = "Exception"
        }
        self.init(error.status, code, error.message)
        self.fieldErrors = [(Self.pascalCase(error.code), "", error.message)]
        self.headers = error.headers
    }

    static let notAuthenticated = ServiceStackError(.unauthorized, "Unauthorized", "Not Authenticated")

    static func validation(_ code: String, field: String, _ message: String) -> ServiceStackError {
        var error = ServiceStackError(.badRequest, code, message)
        error.fieldErrors = [(code, field, message)]
        return error
    }

    var response: Response {
        let body = Envelope(
            responseStatus: .init(
                errorCode: errorCode,
                message: message,
                errors: fieldErrors.isEmpty
                    ? nil
                    : fieldErrors.map { .init(errorCode: $0.errorCode, fieldName: $0.fieldName, message: $0.message) }
            )
        )
        let data = (try? JSONAnswer.bytes(body)) ?? Array("{}".utf8)
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func pascalCase(_ snake: String) -> String {
        snake.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
