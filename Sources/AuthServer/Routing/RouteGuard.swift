import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird

/// The one authenticator and policy check of every route: it reads the access token a request presents in the ways
/// its route's ``RouteAccess`` allows (bearer, each session cookie, a form field), turns it into one typed identity
/// (``SiwaRequestContext/Authentication``: a siwa session, a relying party's token, or a refusal naming why), and
/// accepts or refuses it as the route declares before the handler runs. Handlers read the identity from the context;
/// none of them parses a token to find out who is calling.
struct RouteGuard: Sendable {
    let sessions: SessionService
    let configuration: AuthServerConfiguration
    /// Cookies that hold one of siwa's access tokens, in the order they are tried.
    let cookieNames: [String]
    /// Every cookie that carries a credential (each access cookie and each refresh cookie, siwa's and the contracts'
    /// that are on): a state-changing request with one, on a route checking ``RouteAccess/OriginCheck/anyCookie``,
    /// must come from this site.
    let credentialCookieNames: [String]
    /// The admin API's service tokens.
    let serviceTokens: ServiceTokens
    /// Refuses a session whose account does not hold the admin role (the admin routes' check); returns the subject
    /// through which it holds it.
    let requireAdmin: @Sendable (SiwaRequestContext) async throws -> AdminSubject
    /// Spends what each route declares it spends; `nil` without rate limits.
    var limiter: RateLimiter? = nil

    /// Runs `handler` if the request may call a route of `access`, else answers the route's refusal.
    func respond(
        to request: Request,
        context: SiwaRequestContext,
        access: RouteAccess,
        handler: @Sendable (Request, SiwaRequestContext) async throws -> Response
    ) async throws -> Response {
        // First, before anything of the request is read: a client over its budget costs one bucket look-up.
        if let limiter, let budget = access.declaredBudget { try limiter.spend(budget, request, context) }
        // Before any token is read: from elsewhere the admin routes say nothing of a token's worth.
        if access.isAdmin, !isAdminNetwork(request, context) {
            return try access.refusal.answer(.adminNetworkRefused, request)
        }
        var request = request
        if access.checksOriginFirst, access.checksOriginOfGet || (request.method != .get && request.method != .head) {
            do {
                try await checkOrigin(&request, access: access)
            } catch let error as AuthServerError {
                return try access.refusal.answer(error, request)
            }
        }
        guard access.readsAccessToken else { return try await handler(request, context) }
        var context = context
        if let scope = access.serviceTokenScope, let bearer = request.bearerToken,
            ServiceTokens.looksLikeServiceToken(bearer)
        {
            let token: AdminToken
            do {
                token = try await serviceTokens.authenticate(bearer, needing: scope)
            } catch let error as AuthServerError {
                return try access.refusal.answer(error, request)
            }
            context.serviceToken = token
            context.requestLog?.identify(serviceToken: token.name)
            let response = try await handler(request, context)
            return Self.naming(response, "token \(token.name)")
        }
        do {
            context.authentication = try await authenticate(&request, access: access)
        } catch let error as AuthServerError {
            // A session cookie from another site, or a body that would carry the token could not be read (too
            // large): answered in the route's shape.
            return try access.refusal.answer(error, request)
        }
        switch context.authentication {
        case .session(let claims, _):
            context.requestLog?.identify(user: claims.userID, session: claims.sessionID)
        case .relyingParty(let claims, _) where access.acceptsRelyingParty:
            context.requestLog?.identify(user: claims.userID, session: claims.sessionID)
        case .relyingParty:
            guard !access.required else { return try access.refusal.answer(.relyingPartyToken, request) }
            context.authentication = .refused(.relyingPartyToken)
        case .refused(let error):
            if access.required { return try access.refusal.answer(error, request) }
        case nil:
            if access.required { return try access.refusal.answer(.missingToken, request) }
        }
        if access.needsAdminRole, access.required {
            let subject: AdminSubject
            do {
                subject = try await requireAdmin(context)
            } catch let error as AuthServerError {
                return try access.refusal.answer(error, request)
            }
            if access.serviceTokenScope != nil {
                let response = try await handler(request, context)
                return Self.naming(response, "admin \(subject)")
            }
        }
        return try await handler(request, context)
    }

    /// The admin API's answer with the credential that acted (``HTTPField/Name/siwaActingCredential``).
    private static func naming(_ response: Response, _ credential: String) -> Response {
        var response = response
        response.headers[.siwaActingCredential] = credential
        return response
    }

    /// Refuses a request that changes state from another site when the route's ``RouteAccess/originCheck`` asks
    /// for it, except the session-cookie check, which ``authenticate(_:access:)`` makes once it knows where the token
    /// came from.
    /// - Throws: ``AuthServerError`` 403 `csrf_check_failed`, or what the route's own test of the request throws.
    private func checkOrigin(_ request: inout Request, access: RouteAccess) async throws {
        // A bearer token on a route that reads one was sent on purpose: a browser never adds one on its own.
        let bearer = access.presentations.contains(.bearer) && request.bearerToken != nil
        switch access.originCheck {
        case .never, .sessionCookie:
            return
        case .always:
            break
        case .anyCookie, .anyCookieNamingAnOrigin, .anyCookieAlsoByGet:
            let cookies = request.cookies
            guard !bearer, credentialCookieNames.contains(where: { cookies[$0] != nil }) else { return }
            if case .anyCookieNamingAnOrigin = access.originCheck {
                return try CSRFCheck.refuseForeignOrigin(request, configuration: configuration)
            }
            if case .anyCookieAlsoByGet = access.originCheck {
                return try CSRFCheck.refuseAnotherSite(request, configuration: configuration)
            }
        case .when(_, let applies):
            guard !bearer, try await applies(&request) else { return }
        }
        try CSRFCheck.verify(request, configuration: configuration)
    }

    /// Whether the client (as the rate limits see it, through trusted proxies) is in
    /// ``AuthServerConfiguration/adminNetworks``, or that list is empty.
    private func isAdminNetwork(_ request: Request, _ context: SiwaRequestContext) -> Bool {
        let networks = configuration.adminNetworks
        guard !networks.isEmpty else { return true }
        guard let client = context.clientAddress(of: request, trustedProxies: configuration.trustedProxies) else {
            return false
        }
        return networks.contains(client)
    }

    /// The identity of the access token the request presents in a way `access` allows (bearer first, then the session
    /// cookies, then the form field), or `nil` when it presents none.
    func authenticate(
        _ request: inout Request,
        access: RouteAccess
    ) async throws -> SiwaRequestContext.Authentication? {
        if access.presentations.contains(.bearer), let bearer = request.bearerToken {
            return identify(bearer, via: .bearer)
        }
        if access.presentations.contains(.cookie), request.headers[.cookie] != nil,
            let (name, token) = cookieToken(in: request)
        {
            // From another site: refused before the handler, whether or not the route requires a session.
            if case .sessionCookie = access.originCheck, request.method != .get, request.method != .head {
                try CSRFCheck.verify(request, configuration: configuration)
            }
            return identify(token, via: .cookie(name))
        }
        if access.presentations.contains(.formField), request.method == .post,
            let contentType = request.headers[.contentType],
            contentType.lowercased().hasPrefix("application/x-www-form-urlencoded")
        {
            let body = try await request.collectBody(limit: configuration.maximumBodySize)
            // A field given twice is ambiguous: the handler's own form reading refuses it.
            if let form = FormURLEncoding.decode(body.readableBytesView), let token = form["access_token"],
                !token.isEmpty
            {
                // RFC 6750 §2: one way per request. An Authorization header that is no bearer token (an invalid one,
                // or another scheme) must not be passed over for the form's token.
                guard request.headers[.authorization] == nil else {
                    return .refused(
                        AuthServerError.unauthorized(
                            AuthServerError.Code.invalidToken,
                            "send the access token one way: the Authorization header or the form's access_token"
                        )
                    )
                }
                return identify(token, via: .formField)
            }
        }
        return nil
    }

    private func identify(
        _ token: String,
        via presentation: SiwaRequestContext.Presentation
    )
        -> SiwaRequestContext.Authentication
    {
        // A service token is read only where the route takes one (``respond``); anywhere else it is refused by name.
        if ServiceTokens.looksLikeServiceToken(token) { return .refused(.serviceTokenNotAccepted) }
        do throws(AuthServerError) {
            switch try sessions.verify(token) {
            case .session(let claims): return .session(claims, via: presentation)
            case .relyingParty(let claims): return .relyingParty(claims, via: presentation)
            }
        } catch {
            return .refused(error)
        }
    }

    private func cookieToken(in request: Request) -> (name: String, token: String)? {
        let cookies = request.cookies
        for name in cookieNames {
            if let value = cookies[name]?.value, !value.isEmpty { return (name, value) }
        }
        return nil
    }
}
