import HTTPTypes
import Hummingbird

/// Authenticates every request that carries an access token, before its route runs: the bearer token first, then the
/// session cookies (siwa's, and those of the client contracts that are on, such as ServiceStack's `ss-tok`), and fills
/// ``SiwaRequestContext/authentication``, as hummingbird-auth's authenticators fill
/// `context.identity`. Routes read the context (``SiwaRequestContext/requireSession()``) instead of parsing tokens.
///
/// It never refuses a request itself: a route that needs no session ignores what it found, and a route that needs one
/// answers the refusal in its own contract's shape. A cookie-authenticated request whose method changes state (not
/// GET or HEAD) must pass the CSRF check (``CSRFCheck``).
struct SessionAuthenticator: RouterMiddleware {
    typealias Context = SiwaRequestContext

    let sessions: SessionService
    let configuration: AuthServerConfiguration
    /// Cookies that hold one of siwa's access tokens, in the order they are tried.
    let cookieNames: [String]

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        if let bearer = request.bearerToken {
            do throws(AuthServerError) {
                let claims = try sessions.authenticate(bearer)
                // A relying party's token (siwa's OpenID provider gave it a scope) is for /oauth/userinfo and the
                // team's services, never a session on siwa's own routes: an app that signed a user in with `openid`
                // must not delete their account or use their admin role.
                guard claims.scope == nil else {
                    throw AuthServerError.unauthorized(
                        AuthServerError.Code.relyingPartyToken,
                        "a relying party's access token is not accepted on siwa's own routes"
                    )
                }
                context.authentication = .bearer(claims)
            } catch {
                context.authentication = .refused(error)
            }
        } else if request.headers[.cookie] != nil, let token = cookieToken(in: request) {
            do {
                if request.method != .get && request.method != .head {
                    try CSRFCheck.verify(request, configuration: configuration)
                }
                context.authentication = .cookie(try sessions.authenticate(token))
            } catch {
                context.authentication = .refused(error)
            }
        }
        return try await next(request, context)
    }

    private func cookieToken(in request: Request) -> String? {
        let cookies = request.cookies
        for name in cookieNames {
            if let value = cookies[name]?.value, !value.isEmpty { return value }
        }
        return nil
    }
}
