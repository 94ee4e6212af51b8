import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Synchronization
import Testing

@testable import AuthServer

/// Every route the router has, called with every kind of credential presented every way one can be presented, and
/// each answer checked against the access the route declares where it is registered (``RouteAccess``). The observed
/// table is `docs/route-access.md` (`SIWA_WRITE_ROUTE_ACCESS=1` rewrites it).
@Suite("Server: who may call each route")
struct RouteAccessMatrixTests {
    static let tablePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/route-access.md").path

    /// The kinds of credential a caller can hold.
    enum Kind: String, CaseIterable, Sendable {
        case session = "siwa access token"
        case admin = "admin's access token"
        case relyingParty = "relying party's access token (`openid` only)"
        case idToken = "ID token"
        case refreshToken = "refresh token"
        case expired = "expired access token"
        case signedOut = "signed-out session's access token"
        case disabledAccount = "disabled account's access token"
        case forged = "not a token"
        case readServiceToken = "service token, scope read"
        case writeServiceToken = "service token, scope write"
    }

    /// The ways an access token can come with a request.
    enum Way: String, CaseIterable, Sendable {
        case bearer = "bearer"
        case siwaCookie = "`siwa_session` cookie"
        case serviceStackCookie = "`ss-tok` cookie"
        case formField = "form field `access_token`"

        var presentation: RouteAccess.Presentations {
            switch self {
            case .bearer: .bearer
            case .siwaCookie, .serviceStackCookie: .cookie
            case .formField: .formField
            }
        }
    }

    /// What the declaration says an answer must be.
    enum Expected: Equatable {
        /// The route does not read this way: the answer is the one without the credential.
        case ignored
        /// Let through to the handler.
        case admitted
        /// Refused by the route's guard.
        case refused
        /// Not taken as a caller: refused, or answered as if no credential came (the handler decides).
        case notAdmitted
    }

    /// Routes that end the caller's session when they admit it: each admitted call gets credentials of its own.
    static let ending: Set<String> = ["DELETE /api/me", "POST /auth/logout", "GET /auth/logout", "POST /oauth/logout"]

    /// Every feature on: each contract, the OpenID provider's relying parties, metrics, the domain association.
    static func configuration() -> AuthServerConfiguration {
        var configuration = RelyingParty.configuration()
        configuration.compatibility = .all
        configuration.notificationRateLimit = nil
        configuration.metricsListener = MetricsListener(port: 0)
        configuration.web.domainAssociation = "association"
        return configuration
    }

    /// The routes the router registers with `configuration`, and the access each was registered with.
    static func declared(
        _ configuration: AuthServerConfiguration
    ) async throws -> (routes: [RegisteredRoute], policies: [RegisteredRoute: RouteAccess]) {
        let built = try await OpenAPIDocumentTests.assemble(
            configuration,
            apple: try AppleSignInConfiguration(
                bundleIDs: [ClientID(ServerHarness.bundleID)],
                servicesID: ClientID(ServerHarness.servicesID)
            )
        )
        return (built.routes, built.policies)
    }

    /// What the declaration allows for `kind` presented `way`, independently of how the guard implements it.
    static func expected(_ access: RouteAccess, _ kind: Kind, _ way: Way) -> Expected {
        guard access.presentations.contains(way.presentation) else { return .ignored }
        let accepted: Set<Kind> =
            switch access.credential {
            case .session, .sessionOrContractToken, .contractAdmin: [.session, .admin]
            case .admin: [.admin]
            case .adminOrReadToken: [.admin, .readServiceToken, .writeServiceToken]
            case .adminOrWriteToken: [.admin, .writeServiceToken]
            case .sessionOrRelyingParty: [.session, .admin, .relyingParty]
            default: []
            }
        if accepted.contains(kind) { return .admitted }
        return access.required ? .refused : .notAdmitted
    }

    @Test func everyRouteTheRouterHasDeclaresWhoMayCallIt() async throws {
        let (routes, policies) = try await Self.declared(Self.configuration())
        #expect(routes.count > 50, "the router's routes were read (\(routes.count))")
        let undeclared = Set(routes).subtracting(policies.keys).map(\.description).sorted()
        #expect(undeclared.isEmpty, "routes registered without a RouteAccess:\n\(undeclared.joined(separator: "\n"))")
        let unrouted = Set(policies.keys).subtracting(routes).map(\.description).sorted()
        #expect(unrouted.isEmpty, "declarations without a route:\n\(unrouted.joined(separator: "\n"))")
    }

    /// The metrics listener serves two open routes on a port of its own, and nothing of the public router.
    @Test func theMetricsListenerDeclaresItsTwoOpenRoutes() async throws {
        let built = try await OpenAPIDocumentTests.assemble(
            Self.configuration(),
            apple: try AppleSignInConfiguration(bundleIDs: [ClientID(ServerHarness.bundleID)])
        )
        #expect(built.metricsPolicies.keys.map(\.description).sorted() == ["GET /healthz", "GET /metrics"])
        #expect(built.metricsPolicies.values.allSatisfy { $0.credential == .none && !$0.readsAccessToken })
        #expect(!built.routes.contains { $0.path == "/metrics" }, "the public router has no /metrics")
    }

    @Test(.timeLimit(.minutes(5)))
    func everyRouteAnswersEveryKindOfCredentialAsItDeclares() async throws {
        let configuration = Self.configuration()
        let (_, policies) = try await Self.declared(configuration)
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            let minter = Minter(harness: harness)
            // Minted first, then the clock passes its expiry; every other credential is minted after.
            let expired = try await minter.session("expired@example.com").accessToken
            harness.clock.advance(by: configuration.accessTokenLifetime + 60)
            let shared = try await minter.credentials(expired: expired)

            var failures: [String] = []
            var rows: [String] = []
            for route in policies.keys.sorted() {
                let access = try #require(policies[route])
                var cells: [String] = []
                for kind in Kind.allCases {
                    var symbols = ""
                    for way in Way.allCases {
                        guard way != .formField || route.method == "POST" else { continue }
                        let expected = Self.expected(access, kind, way)
                        // Compared with the same request carrying something that is no credential at all.
                        let baseline = try await Self.send(
                            harness,
                            route,
                            way: way,
                            token: Minter.notAToken,
                            formToken: nil
                        )
                        var token = try #require(shared[kind])
                        if expected == .admitted, Self.ending.contains(route.description) {
                            token = try await minter.fresh(kind)
                        }
                        let answer = try await Self.send(
                            harness,
                            route,
                            way: way,
                            token: token,
                            formToken: route.method == "POST" && route.path.hasPrefix("/admin/")
                                ? minter.formToken(for: token) : nil
                        )
                        let refused = Self.isRefusal(answer, route: route)
                        let asAnonymous = answer.signature == baseline.signature
                        let holds: Bool
                        switch expected {
                        case .ignored: holds = asAnonymous
                        case .admitted: holds = !refused
                        case .refused: holds = refused
                        case .notAdmitted: holds = refused || asAnonymous
                        }
                        if !holds {
                            failures.append(
                                "\(route) with \(kind.rawValue) as \(way.rawValue) (\(access)): expected \(expected), "
                                    + "got \(answer.signature) \(answer.body.prefix(160)) (without it: \(baseline.signature))"
                            )
                        }
                        symbols +=
                            expected == .ignored
                            ? "·" : refused ? "✗" : (asAnonymous && expected != .admitted) ? "–" : "✓"
                    }
                    cells.append("`\(symbols)`")
                }
                // An optional credential's refusal is the handler's, in its route's own shape.
                let refusal = !access.readsAccessToken ? "–" : access.required ? access.refusal.name : "the handler's"
                let spends = access.declaredBudget?.rawValue ?? "?"
                let admin = access.isAdmin ? " (admin networks)" : ""
                let origin = Self.checksOrigin(access, route) ? access.originCheck.description : "–"
                rows.append(
                    "| `\(route)` | \(access)\(admin) | \(spends) | \(refusal) | \(origin) | "
                        + "\(cells.joined(separator: " | ")) |"
                )
            }
            #expect(
                failures.isEmpty,
                "\(failures.count) answers differ from their route's access:\n\(failures.joined(separator: "\n"))"
            )
            try Self.compareTable(rows)
        }
    }

    /// Whether the guard can check the origin of a call of `route` at all: a state-changing method, and a check
    /// that does not depend on a cookie the route never reads.
    static func checksOrigin(_ access: RouteAccess, _ route: RegisteredRoute) -> Bool {
        guard access.checksOriginOfGet || (route.method != "GET" && route.method != "HEAD") else { return false }
        switch access.originCheck {
        case .never: return false
        case .sessionCookie: return access.presentations.contains(.cookie)
        case .always, .anyCookie, .anyCookieNamingAnOrigin, .anyCookieAlsoByGet, .when: return true
        }
    }

    /// The state-changing routes that must refuse another site's request (written here, not derived from the
    /// declarations, so that a declaration that stops checking fails the test).
    static let mustCheckTheOrigin: Set<String> = [
        "POST /admin/tokens/revoke", "POST /admin/users/{id}/{action}", "POST /api/HelloSecure", "DELETE /api/me",
        "POST /auth/logout", "POST /auth/refresh", "POST /oauth/authorize", "POST /oauth/logout",
        "POST /api/Authenticate", "POST /auth", "POST /auth/apple", "POST /json/reply/Authenticate",
        "POST /access-token", "POST /api/GetAccessToken", "POST /json/reply/GetAccessToken",
        // ServiceStack signs out by GET too, which a link on any page sends with the user's cookies.
        "GET /auth/logout", "GET /auth", "GET /api/Authenticate",
    ]

    /// The body by which a call asks for what a route's ``RouteAccess/OriginCheck/when(_:_:)`` checks.
    static let asking: [String: (contentType: String, body: String)] = [
        "POST /oauth/logout": ("application/x-www-form-urlencoded", "confirm=1"),
        "POST /auth": ("application/json", #"{"provider":"logout"}"#),
        "POST /auth/apple": ("application/json", #"{"provider":"logout"}"#),
        "POST /api/Authenticate": ("application/json", #"{"provider":"logout"}"#),
        "POST /json/reply/Authenticate": ("application/json", #"{"provider":"logout"}"#),
    ]

    /// Every state-changing route whose declaration checks the origin, called with every credential cookie (a live
    /// session's) from another site and with no origin at all: refused by its guard before the handler, in its own
    /// shape; and the same call from this site is not refused for its origin. A route that reads a session cookie on
    /// a state-changing call must check it.
    @Test(.timeLimit(.minutes(5)))
    func everyRouteThatChecksTheOriginRefusesAnotherSite() async throws {
        let configuration = Self.configuration()
        let (_, policies) = try await Self.declared(configuration)
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            let minter = Minter(harness: harness)
            var checked: [String] = []
            for route in policies.keys.sorted() {
                let access = try #require(policies[route])
                if route.method != "GET", access.presentations.contains(.cookie) {
                    if case .never = access.originCheck { Issue.record("\(route) reads a session cookie unchecked") }
                }
                guard Self.checksOrigin(access, route) else { continue }
                if case .when = access.originCheck {
                    try #require(Self.asking[route.description] != nil, "\(route): no request that asks")
                }
                checked.append(route.description)
                // A link or a redirect by GET names no origin; the browser says it is another site's.
                var calls: [(origin: String?, site: String?)] = [
                    ("https://elsewhere.example", nil), (nil, nil), (harness.serverURL, nil),
                ]
                if access.checksOriginOfGet { calls += [(nil, "cross-site"), (nil, "same-origin")] }
                for (origin, site) in calls {
                    let session = try await minter.session("origin\(checked.count)@example.com")
                    let path = route.path.replacing("{id}", with: session.userID.description)
                        .replacing("{action}", with: "disable")
                    var headers: HTTPFields = [
                        .cookie: ["siwa_session", "ss-tok"].map { "\($0)=\(session.accessToken)" }
                            .joined(separator: "; ")
                            + "; siwa_refresh=\(session.refreshToken); ss-reftok=\(session.refreshToken)"
                    ]
                    if let origin { headers[.origin] = origin }
                    if let site { headers[CSRFCheck.secFetchSite] = site }
                    var body: ByteBuffer?
                    if let asking = Self.asking[route.description] {
                        headers[.contentType] = asking.contentType
                        body = ByteBuffer(string: asking.body)
                    }
                    let method = try #require(HTTPRequest.Method(route.method))
                    let response = try await harness.server.execute(
                        uri: path,
                        method: method,
                        headers: headers,
                        body: body
                    )
                    let text = String(buffer: response.body)
                    let refused =
                        response.status == .forbidden
                        && (text.contains("csrf_check_failed") || text.contains("CsrfCheckFailed"))
                    let lenient: Bool
                    switch access.originCheck {
                    case .anyCookieNamingAnOrigin, .anyCookieAlsoByGet: lenient = true
                    default: lenient = false
                    }
                    let from = origin ?? site.map { "Sec-Fetch-Site \($0)" } ?? "no origin"
                    if origin == harness.serverURL || (origin == nil && lenient && site != "cross-site") {
                        #expect(!refused, "\(route) from \(from): \(response.status) \(text.prefix(160))")
                    } else {
                        #expect(refused, "\(route) from \(from): \(response.status) \(text.prefix(160))")
                        // Nothing happened: the session still works.
                        let me = try await harness.call(.get, "/api/me", bearer: session.accessToken)
                        #expect(me.status == .ok, "\(route) from \(from) ended the session")
                    }
                }
            }
            #expect(Set(checked) == Self.mustCheckTheOrigin, "the routes that check an origin: \(checked.sorted())")
        }
    }

    // MARK: Requests

    struct Answer {
        var status: HTTPResponse.Status
        var location: String?
        var body: String

        /// What is compared with the answer to the same request without the credential: the status, where a
        /// redirect goes (without its query) and a JSON answer's error code.
        var signature: String {
            var text = "\(status.code)"
            if let location { text += " → " + (location.split(separator: "?").first.map(String.init) ?? location) }
            if let data = body.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let code = object["error"] as? String
            {
                text += " " + code
            }
            return text
        }
    }

    /// The codes of a guard's refusal, in siwa's shape and in ServiceStack's (PascalCase), which a 403 names.
    static let refusalCodes = [
        "csrf_check_failed", "admin_required", "account_disabled", "relying_party_token", "insufficient_scope",
        "AdminRequired",
        "AccountDisabled", "RelyingPartyToken", "CsrfCheckFailed",
    ]

    static func isRefusal(_ answer: Answer, route: RegisteredRoute) -> Bool {
        if answer.status == .unauthorized { return true }
        if answer.status == .forbidden { return refusalCodes.contains { answer.body.contains($0) } }
        // The console sends a browser without an admin's session through the sign-in.
        if route.path.hasPrefix("/admin"), answer.status == .seeOther,
            answer.location?.hasPrefix("/auth/apple/authorize") == true
        {
            return true
        }
        return false
    }

    /// `route` with its parameters filled, called with `token` presented `way`, from this site's
    /// origin so that the cross-site check passes: what is checked here is the credential's kind.
    static func send(
        _ harness: ServerHarness,
        _ route: RegisteredRoute,
        way: Way,
        token: String,
        formToken: String?
    ) async throws -> Answer {
        let path = route.path.replacing("{id}", with: "0190a5e2-6b1c-7000-8000-000000000001")
            .replacing("{action}", with: "disable").replacing("{name}", with: "matrix")
        var headers: HTTPFields = [.origin: harness.serverURL]
        var form: [(String, String)] = []
        if let formToken { form += [("token", formToken), ("confirm", "yes")] }
        switch way {
        case .bearer: headers[.authorization] = "Bearer \(token)"
        case .siwaCookie: headers[.cookie] = "siwa_session=\(token)"
        case .serviceStackCookie: headers[.cookie] = "ss-tok=\(token)"
        case .formField: form.append(("access_token", token))
        }
        var body: ByteBuffer?
        if way == .formField || !form.isEmpty {
            headers[.contentType] = "application/x-www-form-urlencoded"
            body = ByteBuffer(string: ServerHarness.formEncode(form))
        }
        let method = HTTPRequest.Method(route.method) ?? .get
        let response = try await harness.server.execute(uri: path, method: method, headers: headers, body: body)
        return Answer(
            status: response.status,
            location: response.headers[.location],
            body: String(buffer: response.body)
        )
    }

    /// Compares the observed table with `docs/route-access.md`, or writes it with `SIWA_WRITE_ROUTE_ACCESS=1`.
    static func compareTable(_ rows: [String]) throws {
        let kinds = Kind.allCases.map(\.rawValue)
        let text = """
            # Who may call each route

            Generated by `RouteAccessMatrixTests` (`Tests/AuthServerTests/RouteAccessMatrixTests.swift`) from the \
            routes the server registers with every feature on, each called with every kind of credential; the test \
            fails when an answer differs from the access its route declares (`RouteAccess`, where the route is \
            registered) or when this file differs from what it observed. Rewrite it with \
            `SIWA_WRITE_ROUTE_ACCESS=1 swift test --filter RouteAccessMatrixTests`. The threat model is in \
            [security.md](security.md).

            The metrics listener, on a port of its own (`SIWA_METRICS_PORT`), serves `GET /metrics` and \
            `GET /healthz` to anyone who reaches that port, and nothing else; the public port does not serve \
            `/metrics`.

            An admin route (every route that answers by an admin role, the contracts' among them) refuses a client \
            outside `SIWA_ADMIN_ALLOWED_NETWORKS` before it reads any token, in its own shape. "spends" is what a \
            call takes from its client's budget (`SIWA_RATE_LIMIT`) before anything of the request is read: \
            `client` for every route that verifies a credential, signs in, rotates a refresh token or writes, \
            whatever its method; `client + flow` where a web flow starts; `notifications` for Apple's \
            notifications, which have a budget of their own; `nothing` for reads.

            "origin checked with" says when a request that changes state must come from this site (an `Origin`, \
            else a `Referer`, of the public URL or an allowed return origin): the route's guard refuses it before \
            the handler, in the route's shape (`everyRouteThatChecksTheOriginRefusesAnotherSite` sends each one from \
            another site).

            Each cell gives one answer per way of presenting the credential, in this order: \
            \(Way.allCases.map(\.rawValue).joined(separator: ", ")) (the last only on a POST).

            - `✓` let through to the route's handler;
            - `✗` refused before the handler (401, a 403 naming why, or the console's sign-in redirect);
            - `–` not taken as a caller: answered as a request carrying `not-a-token` instead;
            - `·` not read at all on this route: answered as a request carrying `not-a-token` instead.

            | route | accepts | spends | refusal | origin checked with | \(kinds.joined(separator: " | ")) |
            |---|---|---|---|---|\(kinds.map { _ in "---" }.joined(separator: "|"))|
            \(rows.joined(separator: "\n"))

            """
        if ProcessInfo.processInfo.environment["SIWA_WRITE_ROUTE_ACCESS"] == "1" {
            try text.write(toFile: tablePath, atomically: true, encoding: .utf8)
            return
        }
        let file = (try? String(contentsOfFile: tablePath, encoding: .utf8)) ?? ""
        #expect(
            file == text,
            "docs/route-access.md is not what the server answers: rewrite it with SIWA_WRITE_ROUTE_ACCESS=1 and read the diff"
        )
    }
}

/// Mints real credentials of every kind against the server under test and the emulator.
private struct Minter {
    let harness: ServerHarness
    private let counter = Counter()

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    private func next() -> Int {
        counter.value.withLock {
            $0 += 1
            return $0
        }
    }

    /// What a request carries in place of a credential for the answer every other is compared with.
    static let notAToken = "not-a-token"

    /// A native sign-in: siwa's access and refresh tokens and the account.
    func session(_ email: String) async throws -> (accessToken: String, refreshToken: String, userID: UserID) {
        let signedIn = try await harness.signIn(email)
        try #require(signedIn.status == .ok, "sign-in: \(signedIn.json)")
        let user = try #require(signedIn.json["user"] as? [String: Any])
        let id = try #require(user["id"] as? String)
        return (
            try #require(signedIn.json["accessToken"] as? String),
            try #require(signedIn.json["refreshToken"] as? String),
            try #require(UserID(id))
        )
    }

    /// An admin's session: a new account granted the role.
    func admin() async throws -> String {
        let admin = try await session("admin\(next())@example.com")
        #expect(try await harness.store.grantAdmin(AdminSubject(admin.userID), by: .operator, now: harness.clock.now))
        return admin.accessToken
    }

    /// A relying party's access token (granted `openid` only) and its ID token, by a browser of its own.
    func relyingParty() async throws -> (accessToken: String, idToken: String) {
        harness.browserCookies.clear()
        let signIn = try await harness.openIDSignIn(
            ServerHarness.authorizePath(.a, scope: "openid"),
            email: "rp\(next())@example.com"
        )
        let redeemed = try await harness.redeem(try #require(signIn.query["code"]), .a)
        try #require(redeemed.status == .ok, "redeem: \(redeemed.json)")
        return (
            try #require(redeemed.json["access_token"] as? String), try #require(redeemed.json["id_token"] as? String)
        )
    }

    /// One credential of every kind.
    func credentials(expired: String) async throws -> [RouteAccessMatrixTests.Kind: String] {
        let session = try await session("user@example.com")
        let admin = try await admin()
        let relyingParty = try await relyingParty()
        let signedOut = try await self.session("signed-out@example.com")
        let logout = try await harness.call(.post, "/auth/logout", bearer: signedOut.accessToken)
        try #require(logout.status == .noContent)
        let disabled = try await self.session("disabled@example.com")
        let disable = try await harness.call(.post, "/admin/api/users/\(disabled.userID)/disable", bearer: admin)
        try #require(disable.status == .ok, "disable: \(disable.json)")
        return [
            .session: session.accessToken, .admin: admin, .relyingParty: relyingParty.accessToken,
            .idToken: relyingParty.idToken, .refreshToken: session.refreshToken, .expired: expired,
            .signedOut: signedOut.accessToken, .disabledAccount: disabled.accessToken,
            .forged: "forged.\(Minter.notAToken).token",
            .readServiceToken: try await serviceToken(.read), .writeServiceToken: try await serviceToken(.write),
        ]
    }

    /// A new service token of the admin API, as `siwa admin tokens create` makes it.
    func serviceToken(_ scope: AdminTokenScope) async throws -> String {
        try await ServiceTokens.create(
            name: "matrix-\(scope.rawValue)-\(next())",
            scope: scope,
            lifetimeDays: 30,
            by: .operator,
            in: harness.store,
            now: harness.clock.now
        ).secret
    }

    /// A new credential of `kind`, for a route that may end the session it admits.
    func fresh(_ kind: RouteAccessMatrixTests.Kind) async throws -> String {
        switch kind {
        case .session: try await session("fresh\(next())@example.com").accessToken
        case .admin: try await admin()
        case .relyingParty: try await relyingParty().accessToken
        default: throw MinterError.notMintedFresh(kind.rawValue)
        }
    }

    enum MinterError: Error { case notMintedFresh(String) }

    /// The console's form token for the session of `token`, when it names one.
    func formToken(for token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = String(parts[1]).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let sid = claims["sid"] as? String, let session = SessionID(sid)
        else { return nil }
        return FormToken(dataKey: harness.dataKey, purpose: .adminForms).token(for: session)
    }
}
