import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird

/// Who may call a route, declared where the route is registered (``PolicedRoutes``) and enforced by ``RouteGuard``
/// before the handler runs: which credential the route accepts, how its access token may be presented, whether one is
/// required, and how a refusal is answered.
///
/// Credentials that travel in the body (a refresh token, Apple's signed notification, a relying party's client
/// credentials, the web flow's `form_post`) are declared too: for those routes the guard reads no access token at
/// all, so a handler cannot mistake one for the credential it checks.
struct RouteAccess: Sendable, CustomStringConvertible {
    /// The kind of credential a route accepts.
    enum Credential: String, Sendable, CaseIterable {
        /// Nothing: a public route. No access token is read.
        case none = "none"
        /// One of siwa's own access tokens (a session). A relying party's token is refused.
        case session = "siwa session"
        /// A siwa session whose account holds the admin role.
        case admin = "admin session"
        /// An admin session, or a service token of either scope (the admin API's reading routes).
        case adminOrReadToken = "admin session or service token (read)"
        /// An admin session, or a service token of scope write (the admin API's routes that act).
        case adminOrWriteToken = "admin session or service token (write)"
        /// A siwa session whose account holds a contract's own admin role (ServiceStack's `Admin`, from
        /// `SIWA_ADMIN_USERS`), which the handler checks: an admin route all the same, behind the admin networks.
        case contractAdmin = "siwa session with the contract's Admin role"
        /// A relying party's access token or a siwa session (`/oauth/userinfo`).
        case sessionOrRelyingParty = "siwa session or relying party's token"
        /// A siwa session, or the contract's own opaque token, which the handler checks.
        case sessionOrContractToken = "siwa session or the contract's token"
        /// A refresh token of the route's contract, in the body or the refresh cookie; the handler checks it.
        case refreshToken = "refresh token"
        /// Apple's `form_post`, bound to the browser by the flow cookie; the handler checks both.
        case appleCallback = "Apple's form_post and the flow cookie"
        /// Apple's signed server-to-server notification; the handler verifies it.
        case appleNotification = "Apple's signed notification"
        /// A relying party's client credentials at the token endpoint; the handler authenticates the client.
        case clientCredentials = "client credentials"
    }

    /// The ways an access token may be presented.
    struct Presentations: OptionSet, Sendable, Hashable {
        let rawValue: UInt8
        /// `Authorization: Bearer`.
        static let bearer = Presentations(rawValue: 1)
        /// A session cookie: siwa's `siwa_session`, or a contract's (ServiceStack's `ss-tok`) when that contract is on.
        static let cookie = Presentations(rawValue: 2)
        /// The `access_token` field of a form body (RFC 6750 §2.2), where the route's spec allows it.
        static let formField = Presentations(rawValue: 4)
    }

    /// How a refusal is answered: siwa's `{"error", "message"}`, or the route's own contract's shape.
    struct Refusal: Sendable {
        /// The shape's name, for the table of who may call what.
        var name: String
        /// Answers `error` (or throws it, for siwa's JSON shape).
        var answer: @Sendable (_ error: AuthServerError, _ request: Request) throws -> Response

        /// `{"error", "message"}` with the error's status.
        static let json = Refusal(name: "JSON") { error, _ in throw error }
    }

    /// When the guard checks that a request comes from this site. Requests by GET or HEAD change nothing and are
    /// not checked, but on a route that signs out by GET (``anyCookieAlsoByGet``); but for ``always``, a bearer token
    /// on a route that reads one needs no check (a browser never adds one on its own).
    enum OriginCheck: Sendable, CustomStringConvertible {
        /// Never: the route reads only, or signs in and checks its own lenient way.
        case never
        /// When the access token the guard read came from a session cookie.
        case sessionCookie
        /// On every request that changes state, however its credential comes (a bearer token too): the console's
        /// forms, which only a page of this site posts.
        case always
        /// When the request carries any session or refresh cookie (siwa's, or a contract's that is on): the handler
        /// reads a refresh cookie itself, to rotate or end it.
        case anyCookie
        /// As ``anyCookie``, but only a request that names an origin (`Origin`, else `Referer`) must name this site:
        /// for a contract whose non-browser clients keep its cookies and send no `Origin`. Browsers send `Origin`
        /// with every cross-site POST, so another site's form is refused all the same.
        case anyCookieNamingAnOrigin
        /// As ``anyCookieNamingAnOrigin``, by GET too, and a request the browser marks as another site's
        /// (`Sec-Fetch-Site: cross-site` or `same-site`) must name this site or an allowed one: for a contract that
        /// signs out by GET (ServiceStack's `GET /auth/logout`), which a link or a redirect on any page would
        /// otherwise send with the user's cookies (they are `SameSite=Lax`, sent on a top-level navigation).
        case anyCookieAlsoByGet
        /// When `applies` says the request asks for a state change by cookie that another site must not ask for (a
        /// form confirming a sign-out, a contract's logout call); `what` names it in the table of who may call what.
        /// It may read the body, which the handler then reads from memory.
        case when(_ what: String, _ applies: @Sendable (_ request: inout Request) async throws -> Bool)

        /// When a form posted by POST sets `field` to `value`. The guard reads the body (at most `limit` bytes) that
        /// the handler then reads from memory; a form that does not decode applies nothing here, and its handler
        /// refuses it.
        static func whenForm(_ what: String, field: String, is value: String, limit: Int) -> OriginCheck {
            .when(what) { request in
                guard request.method == .post,
                    request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
                else { return false }
                let body = try await request.collectBody(upTo: limit)
                return FormURLEncoding.decode(body.readableBytesView)?[field] == value
            }
        }

        var description: String {
            switch self {
            case .never: "never"
            case .sessionCookie: "a session cookie"
            case .always: "every request"
            case .anyCookie: "any session or refresh cookie"
            case .anyCookieNamingAnOrigin: "any session or refresh cookie, when the request names an origin"
            case .anyCookieAlsoByGet:
                "any session or refresh cookie, also by GET, when the request names an origin or comes from another site"
            case .when(let what, _): what
            }
        }
    }

    /// What a call spends from its client's budget (``RateLimiter``), before anything of the request is read: every
    /// route that verifies a credential, signs in, rotates a refresh token or writes spends, whatever its method.
    enum Budget: String, Sendable {
        /// Nothing: the route only reads (an access token's signature is all it checks).
        case none = "nothing"
        /// The client's budget, which every sign-in, rotation and write of the client shares.
        case client = "client"
        /// The client's budget and its web-flow budget: the route makes the server keep a flow's state.
        case flowStart = "client + flow"
        /// The budget of the address Apple's notifications come from, apart from the users'.
        case notifications = "notifications"
    }

    var credential: Credential
    var presentations: Presentations
    /// Whether the route answers a refusal without a credential it accepts (`false`: the handler sees what was found,
    /// or a refusal, and decides; a credential of a kind the route does not accept is always a refusal there).
    var required: Bool
    /// When a request that changes state must come from this site (``CSRFCheck``): the guard checks it before the
    /// handler runs and answers a refusal in the route's shape, so no handler checks an origin itself.
    var originCheck = OriginCheck.sessionCookie
    var refusal = Refusal.json
    /// What the route spends, when its declaration says so; else what its credential and method imply
    /// (``budget(for:)``).
    var declaredBudget: Budget?

    /// A public route: no access token is read.
    static let open = RouteAccess(credential: .none, presentations: [], required: false)

    /// A route whose credential travels in the body, checked by its handler; no access token is read.
    static func checkedByHandler(_ credential: Credential, refusal: Refusal = .json) -> RouteAccess {
        RouteAccess(credential: credential, presentations: [], required: false, refusal: refusal)
    }

    /// A siwa session, as a bearer token or a session cookie.
    static func session(required: Bool = true, refusal: Refusal = .json) -> RouteAccess {
        RouteAccess(credential: .session, presentations: [.bearer, .cookie], required: required, refusal: refusal)
    }

    /// This access, for a route that spends `budget` whatever its credential and method imply: a GET that signs in,
    /// renews a session from a refresh cookie, starts a web flow or writes.
    func spending(_ budget: Budget) -> RouteAccess {
        var access = self
        access.declaredBudget = budget
        return access
    }

    /// What a call of the route by `method` spends: the declared budget, else the notifications' for Apple's
    /// notifications, the client's for a credential the handler verifies (a refresh token, Apple's `form_post`, client
    /// credentials) and for every method but GET, HEAD and OPTIONS, and nothing for the rest.
    func budget(for method: HTTPRequest.Method) -> Budget {
        if let declaredBudget { return declaredBudget }
        switch credential {
        case .appleNotification: return .notifications
        case .refreshToken, .appleCallback, .clientCredentials: return .client
        default: return [.get, .head, .options].contains(method) ? .none : .client
        }
    }

    /// Whether the route is an admin route: it answers by an admin role, so the admin networks apply before any
    /// token is read.
    var isAdmin: Bool { [.admin, .adminOrReadToken, .adminOrWriteToken, .contractAdmin].contains(credential) }

    /// Whether the guard checks that the account holds siwa's admin role (``AdminAccess``); a contract's own role is
    /// its handler's check.
    var needsAdminRole: Bool { [.admin, .adminOrReadToken, .adminOrWriteToken].contains(credential) }

    /// The scope a service token needs on this route, or `nil` where none is accepted.
    var serviceTokenScope: AdminTokenScope? {
        switch credential {
        case .adminOrReadToken: .read
        case .adminOrWriteToken: .write
        default: nil
        }
    }

    /// Whether the guard checks the origin before it reads a token: every ``originCheck`` but the session cookie's,
    /// which waits until the guard knows where the token came from.
    var checksOriginFirst: Bool {
        switch originCheck {
        case .never, .sessionCookie: false
        case .always, .anyCookie, .anyCookieNamingAnOrigin, .anyCookieAlsoByGet, .when: true
        }
    }

    /// Whether the guard checks the origin of a request by GET or HEAD too.
    var checksOriginOfGet: Bool {
        if case .anyCookieAlsoByGet = originCheck { return true }
        return false
    }

    /// Whether the guard reads an access token for this route at all.
    var readsAccessToken: Bool { !presentations.isEmpty }

    /// Whether a relying party's access token is accepted.
    var acceptsRelyingParty: Bool { credential == .sessionOrRelyingParty }

    var description: String {
        var ways: [String] = []
        if presentations.contains(.bearer) { ways.append("bearer") }
        if presentations.contains(.cookie) { ways.append("cookie") }
        if presentations.contains(.formField) { ways.append("form field") }
        guard readsAccessToken else { return credential.rawValue }
        return "\(credential.rawValue) (\(ways.joined(separator: ", "))\(required ? "" : ", optional"))"
    }
}
