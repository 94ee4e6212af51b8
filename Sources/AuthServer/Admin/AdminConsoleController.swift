import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The operator console's pages under `/admin`: server-rendered HTML, no script, every form carrying the admin's
/// ``FormToken`` and checked for this site's `Origin` (``CSRFCheck``). A browser without a session is sent
/// through the web sign-in and back; an account without the admin role gets a 403 page that says so.
struct AdminConsoleController: RouteProvider {
    let configuration: AuthServerConfiguration
    let access: AdminAccess
    let store: any AccountStore
    let actions: AdminActions
    let formTokens: FormToken
    let keys: Keys
    let clock: any WallClock
    /// Which webhook endpoints are disabled: a banner on every page while one is.
    var webhookHealth = WebhookHealth()

    /// What the console says of siwa's keys and Apple credentials: the overview's panel, and the banner on every
    /// page while Apple refuses siwa's client secret.
    struct Keys: Sendable {
        let appleHealth: AppleCredentialHealth
        /// Whether siwa has Apple credentials at all.
        let appleCredentialsConfigured: Bool
        /// The data keys and where they come from.
        let sealer: DataSealer
    }

    /// An admin's session (a cookie, or a bearer token); a browser without one is sent through the sign-in, any other
    /// refusal is a page that says why.
    static let access = RouteAccess(
        credential: .admin,
        presentations: [.cookie, .bearer],
        required: true,
        refusal: .consolePage
    )

    /// The console's forms': an admin's session, and this site's origin whatever carries the session.
    static let formAccess = {
        var access = Self.access
        access.originCheck = .always
        return access
    }()

    func addRoutes(to routes: PolicedRoutes) {
        routes.get("/admin", access: Self.access, use: overview)
        routes.get("/admin/users", access: Self.access, use: users)
        routes.get("/admin/users/:id", access: Self.access, use: user)
        routes.post("/admin/users/:id/:action", access: Self.formAccess, use: act)
        routes.get("/admin/audit", access: Self.access, use: audit)
        routes.get("/admin/tokens", access: Self.access, use: tokens)
        routes.post("/admin/tokens/revoke", access: Self.formAccess, use: revokeToken)
    }

    // MARK: Who is asking

    enum Gate {
        case admin(AdminAccess.Admin)
        case refused(Response)

        /// The page for a request that is not an admin's (a redirect or a refusal).
        var answer: Response {
            if case .refused(let response) = self { return response }
            return Response(status: .internalServerError)
        }
    }

    /// The signed-in admin (the route's guard has let only an admin's session through), or the refusal page when the
    /// account lost the role or was disabled since.
    func gate(_ request: Request, _ context: SiwaRequestContext) async throws -> Gate {
        do {
            return .admin(try await access.admin(context))
        } catch let error as AuthServerError {
            return .refused(Self.refusal(error))
        }
    }

    /// The answer to a request without an admin's session: a browser that is not signed in (or whose session ended)
    /// goes through the web sign-in and back here; a cookie sent by another site's form, or an account that is not an
    /// admin's, gets a page that says so.
    static func refusal(for request: Request, _ error: AuthServerError) -> Response {
        guard error.status == .unauthorized else { return refusal(error) }
        var path = request.uri.path
        if let query = request.uri.query, !query.isEmpty { path += "?" + query }
        let returnURL = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "%2Fadmin"
        return Response(
            status: .seeOther,
            headers: [.location: "/auth/apple/authorize?returnUrl=\(returnURL)", .cacheControl: "no-store"]
        )
    }

    static func refusal(_ error: AuthServerError, admin: AdminAccess.Admin? = nil) -> Response {
        let explanation: String
        switch error.code {
        case AuthServerError.Code.adminProtected:
            explanation =
                "This account holds the admin role. Only an admin listed in <code>SIWA_ADMIN_USERS</code> may end its "
                + "sessions, disable or delete it."
        case AuthServerError.Code.adminRequired:
            // Said to someone who is not an operator: no way in, no setting, no command.
            explanation =
                "You are signed in, but your account does not hold the admin role, so this console is not open to "
                + "you. If you should have access, ask the people who run this service."
        case AuthServerError.Code.adminNetworkRefused:
            explanation =
                "The console answers only the operators' networks, and this request did not come from one of them."
        default:
            explanation = HTMLPage.escape(error.message)
        }
        let title =
            switch error.code {
            case AuthServerError.Code.adminNetworkRefused: "Not from this network"
            case _ where error.status == .forbidden: "Not an admin"
            default: "Refused"
            }
        let page = AdminPage(
            title: title,
            section: nil,
            signedInAs: admin.map(Self.name),
            main:
                "<p class=\"notice error\">\(explanation)</p><p>Error code: <code>\(HTMLPage.escape(error.code))</code></p>"
                + (error.code == AuthServerError.Code.adminRequired ? signOut : "")
        )
        return page.response(status: error.status)
    }

    /// A way out for someone signed in with an account that is not an admin's.
    private static let signOut = """
        <form method="post" action="/auth/logout"><button type="submit" class="secondary">Sign out</button></form>
        """

    static func name(_ admin: AdminAccess.Admin) -> String {
        admin.user.displayName ?? admin.user.email ?? admin.user.id.description
    }

    func page(
        _ title: String,
        _ section: AdminPage.Section,
        _ admin: AdminAccess.Admin,
        _ main: String
    )
        -> Response
    {
        AdminPage(
            title: title,
            section: section,
            signedInAs: Self.name(admin),
            role: access.isConfigured(admin.subject) ? "admin (configuration)" : "admin (granted)",
            banner: Self.banners(keys.appleHealth.failing, webhookHealth.disabled),
            main: main
        )
        .response()
    }

    // MARK: Pages

    @Sendable func overview(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        let stats = try await AdminStatistics(store: store, now: clock.now).stats(days: 30)
        let cards = [
            ("Accounts", stats.accounts.total), ("New in 24 hours", stats.accounts.newLast24Hours),
            ("New in 7 days", stats.accounts.newLast7Days),
        ].map { "<div class=\"card\"><div>\($0.0)</div><div class=\"value\">\($0.1)</div></div>" }.joined()
        func chart(_ title: String, _ series: [(String, [Int])]) -> String {
            let chart = DailyChart(
                title: title,
                days: stats.days,
                series: series.map { DailyChart.Series(name: $0.0, counts: $0.1) }
            )
            guard series.contains(where: { $0.1.contains { $0 > 0 } }) else {
                return """
                    <section class="panel"><h2>\(HTMLPage.escape(title))</h2><p class="muted">No data yet: nothing \
                    recorded in the last \(stats.days.count) days.</p></section>
                    """
            }
            return """
                <section class="panel"><h2>\(HTMLPage.escape(title))</h2>\(chart.svg)\(chart.legend)\
                <details><summary>The numbers</summary><div class="scroll">\(chart.table)</div></details></section>
                """
        }
        let channels = stats.signInsByChannel.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let reasons = stats.refusedSignInsByReason.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let keysPanel = try await keysPanel()
        let revocations = try await revocationsPanel()
        let refused = try await refusedLastHour()
        let main =
            attentionPanel(revocations: revocations.count, refused: refused.total)
            + "<div class=\"cards\">\(cards)</div>" + keysPanel + revocations.panel + refused.panel
            + (try await recentAdminActions())
            + chart(
                "Sign-ins per day by channel",
                channels.isEmpty ? [("sign-ins", stats.newAccounts.map { _ in 0 })] : channels
            )
            + chart("New accounts per day", [("new accounts", stats.newAccounts)])
            + chart("Refresh-token reuse detected per day", [("reuse", stats.refreshTokenReuse)])
            + chart(
                "Refused sign-ins per day by reason",
                reasons.isEmpty ? [("refused", stats.newAccounts.map { _ in 0 })] : reasons
            )
        return page("Overview", .overview, admin, main)
    }

    @Sendable func users(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        let query = request.uri.queryParameters["q"].map(String.init) ?? ""
        let cursor: PageCursor?
        do {
            cursor = try RequestFields.cursor(request)
        } catch let error as AuthServerError {
            return Self.refusal(error, admin: admin)
        }
        let page: Page<UserRecord>
        do {
            page = try await RequestFields.refusingForeignCursors {
                try await store.searchUsers(query, limit: RequestFields.pageLimit, after: cursor)
            }
        } catch let error as AuthServerError {
            return Self.refusal(error, admin: admin)
        }
        let rows = page.items.map { user in
            let relay = user.isPrivateEmail ? " <span class=\"badge muted\">relay</span>" : ""
            return """
                <tr><td><a href="/admin/users/\(user.id)">\(HTMLPage.escape(user.displayName ?? "(no name)"))</a></td>\
                <td>\(HTMLPage.escape(user.email ?? "–"))\(relay)</td><td>\(Self.time(user.createdAt))</td>\
                <td>\(user.lastSignInAt.map(Self.time) ?? "–")</td><td>\(Self.status(user.status))</td></tr>
                """
        }.joined()
        let next =
            page.next.map {
                "<div class=\"pager\"><a href=\"/admin/users?q=\(Self.queryValue(query))&amp;after=\($0)\">Next page</a></div>"
            } ?? ""
        let main = """
            <form class="search" method="get" action="/admin/users" role="search">\
            <label for="q" class="visually-hidden">Search</label>\
            <input type="search" id="q" name="q" value="\(HTMLPage.escape(query))" \
            placeholder="email, name, siwa id or Apple sub"><button type="submit">Search</button></form>
            <div class="panel scroll"><table><thead><tr><th>Name</th><th>Email</th><th>Created</th>\
            <th>Last sign-in</th><th>Status</th></tr></thead><tbody>\(rows.isEmpty ? "<tr><td colspan=\"5\">No account matches.</td></tr>" : rows)</tbody></table></div>\(next)
            """
        return self.page("Users", .users, admin, main)
    }

    @Sendable func user(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        guard let id = context.parameters.get("id").flatMap(UserID.init), let user = try await store.user(id: id) else {
            return Self.refusal(AdminAPIController.noSuchUser, admin: admin)
        }
        let now = clock.now
        let token = try await store.appleToken(userID: user.id)
        let sessions = try await store.sessions(userID: user.id, now: now, limit: RequestFields.maximumLimit)
        let formToken = formTokens.token(for: admin.sessionID)
        func form(
            _ action: String,
            _ label: String,
            _ style: String,
            hidden: [(String, String)] = [],
            confirm: String? = nil,
            layout: String = "action"
        ) -> String {
            let fields = ([("token", formToken)] + hidden).map {
                "<input type=\"hidden\" name=\"\($0.0)\" value=\"\(HTMLPage.escape($0.1))\">"
            }.joined()
            let confirmation =
                confirm.map {
                    "<label><input type=\"checkbox\" name=\"confirm\" value=\"yes\" required> \(HTMLPage.escape($0))</label> "
                } ?? ""
            return """
                <form class="\(layout)" method="post" action="/admin/users/\(user.id)/\(action)">\(fields)\(confirmation)\
                <button type="submit" class="\(style)">\(label)</button></form>
                """
        }
        let notice =
            request.uri.queryParameters["done"].map {
                "<p class=\"notice\">Done: \(HTMLPage.escape(String($0))).</p>"
            } ?? ""
        // Another admin's account: only the configuration's admins may act on it, and the page says so, offering no
        // button the server would refuse.
        let targetRole = try await access.role(of: user)
        let protected = user.id != admin.user.id && targetRole != nil
        let mayAct = !protected || access.isConfigured(admin.subject)
        let sessionRows = sessions.map { session in
            let end =
                !session.isActive(at: now)
                ? "ended \(session.revokedAt.map(Self.time) ?? "")"
                : !mayAct
                    ? "active"
                    : form(
                        "end-session",
                        "End",
                        "secondary",
                        hidden: [("session", session.id.description)],
                        confirm: "sure",
                        layout: "inline"
                    )
            return """
                <tr><td>\(Self.time(session.createdAt))</td><td>\(session.lastUsedAt.map(Self.time) ?? "–")</td>\
                <td>\(HTMLPage.escape(session.metadata.channel?.rawValue ?? "–"))</td>\
                <td>\(HTMLPage.escape(session.metadata.userAgent ?? "–"))</td>\
                <td>\(HTMLPage.escape(session.metadata.clientAddress ?? "–"))</td>\
                <td>\(session.expiresAt.map(Self.time) ?? "–")</td><td>\(end)</td></tr>
                """
        }.joined()
        let relay = user.isPrivateEmail ? " <span class=\"badge muted\">relay</span>" : ""
        let apple =
            token.map {
                "held for \(HTMLPage.escape($0.clientID.rawValue)) since \(Self.time($0.storedAt)); Apple last confirmed it "
                    + ($0.lastValidatedAt.map(Self.time) ?? "never")
            } ?? "none held"
        let statusAction =
            user.status == .disabled
            ? form("enable", "Enable", "secondary", confirm: "Let this account sign in again")
            : form("disable", "Disable", "secondary", confirm: "End its sessions and refuse its sign-ins")
        let actions =
            mayAct
            ? form("end-all", "End all sessions", "secondary", confirm: "Sign this account out everywhere")
                + statusAction
            : "<p class=\"notice\">This account holds the admin role. Only an admin listed in "
                + "<code>SIWA_ADMIN_USERS</code> may end its sessions, disable or delete it.</p>"
        // Deleting cannot be undone: set apart from the routine actions, below the account's sessions.
        let dangerZone =
            mayAct
            ? """
            <section class="panel danger-zone" id="delete"><h2>Delete this account</h2><p>Its sessions end, its data \
            goes and siwa revokes its Apple token; this cannot be undone.</p>\
            \(form("delete", "Delete account", "danger", confirm: "Delete it and revoke at Apple"))</section>
            """ : ""
        let main = """
            \(notice)<section class="panel"><dl>\
            <dt>Name</dt><dd>\(HTMLPage.escape(user.displayName ?? "(no name)"))</dd>\
            <dt>Email</dt><dd>\(HTMLPage.escape(user.email ?? "–"))\(relay) \
            \(user.emailVerified ? "verified" : "not verified"), forwarding \(user.emailForwarding ? "on" : "off")</dd>\
            <dt>Status</dt><dd>\(Self.status(user.status))</dd>\
            <dt>siwa id</dt><dd><code>\(user.id)</code></dd>\
            <dt>Apple sub</dt><dd><code>\(HTMLPage.escape(user.appleUserID.rawValue))</code></dd>\
            <dt>Client id</dt><dd>\(HTMLPage.escape(user.clientID.rawValue))</dd>\
            <dt>Created</dt><dd>\(Self.time(user.createdAt))</dd>\
            <dt>Last sign-in</dt><dd>\(user.lastSignInAt.map(Self.time) ?? "–")</dd>\
            <dt>Apple refresh token</dt><dd>\(apple)</dd></dl></section>
            <section class="panel"><h2>Actions</h2>\(actions)</section>
            <section class="panel"><h2>Sessions</h2><div class="scroll"><table><thead><tr><th>Created</th>\
            <th>Last used</th><th>Channel</th><th>User agent</th><th>Address</th><th>Expires</th><th></th></tr></thead>\
            <tbody>\(sessionRows.isEmpty ? "<tr><td colspan=\"7\">No sessions.</td></tr>" : sessionRows)</tbody></table></div></section>
            <p><a href="/admin/audit?user=\(user.id)">This account's audit log</a></p>\(dangerZone)
            """
        return page(user.displayName ?? user.email ?? "Account", .users, admin, main)
    }

    @Sendable func act(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        do {
            let fields = try await checkedForm(request, admin)
            guard let id = context.parameters.get("id").flatMap(UserID.init), let user = try await store.user(id: id)
            else { throw AdminAPIController.noSuchUser }
            let done: String
            switch context.parameters.get("action") ?? "" {
            case "end-session":
                guard let session = fields["session"].flatMap(SessionID.init) else {
                    throw RequestFields.invalid("session", "is not a session id")
                }
                _ = try await actions.endSessions(of: user, only: session, by: .admin(admin))
                done = "session ended"
            case "end-all":
                done = "\(try await actions.endSessions(of: user, only: nil, by: .admin(admin)).count) sessions ended"
            case "disable":
                _ = try await actions.disable(user, by: .admin(admin))
                done = "account disabled"
            case "enable":
                _ = try await actions.enable(user, by: .admin(admin))
                done = "account enabled"
            case "delete":
                let deletion = try await actions.delete(user, by: .admin(admin))
                return Response(
                    status: .seeOther,
                    headers: [
                        .location:
                            "/admin/users?deleted=\(user.id)&revocation=\(Self.queryValue(deletion.appleRevocation.summary))",
                        .cacheControl: "no-store",
                    ]
                )
            default:
                throw AuthServerError(.notFound, AuthServerError.Code.notFound, "there is no such action")
            }
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/admin/users/\(user.id)?done=\(Self.queryValue(done))", .cacheControl: "no-store",
                ]
            )
        } catch let error as AuthServerError {
            return Self.refusal(error, admin: admin)
        }
    }

    /// The fields of a console form whose form token (the admin's session's) and confirmation box are checked; the
    /// route's guard checked its origin (``CSRFCheck``) before.
    /// - Throws: ``AuthServerError`` 403 `csrf_check_failed` for another session's form token, or 400 when the box is
    ///   not ticked.
    func checkedForm(_ request: Request, _ admin: AdminAccess.Admin) async throws -> [String: String] {
        var request = request
        let body = try await request.collectBody(limit: configuration.maximumBodySize)
        let fields = FormURLEncoding.decode(body.readableBytesView) ?? [:]
        guard formTokens.accepts(fields["token"], for: admin.sessionID) else {
            throw AuthServerError(
                .forbidden,
                AuthServerError.Code.csrfCheckFailed,
                "the form's token is not this session's: reload the page and try again"
            )
        }
        guard fields["confirm"] == "yes" else {
            throw RequestFields.invalid("confirm", "must be ticked to confirm the action")
        }
        return fields
    }

    /// The Apple revocations not done yet: Apple unreachable or refusing, or a 200 after which the token still
    /// refreshes (unconfirmed). Nothing when the queue is empty.
    private func revocationsPanel() async throws -> (panel: String, count: Int) {
        let waiting = try await store.dueAppleRevocations(now: .distantFuture, limit: 20)
        guard !waiting.isEmpty else { return ("", 0) }
        let rows = waiting.map { pending in
            """
            <tr><td><a href="/admin/users/\(pending.userID)"><code>\(pending.userID)</code></a></td>\
            <td>\(HTMLPage.escape(pending.clientID.rawValue))</td><td>\(pending.attempts)</td>\
            <td>\(Self.time(pending.nextAttemptAt))</td>\
            <td>\(HTMLPage.escape(pending.lastError ?? "not tried yet"))</td></tr>
            """
        }.joined()
        let panel = """
            <section class="panel" id="revocations"><h2>Apple revocations not confirmed</h2>\
            <p>Deleted accounts whose Apple token is not known to be revoked yet; siwa retries each until a refresh \
            grant with the token fails\(waiting.count == 20 ? " (the 20 due first)" : "").</p>\
            <div class="scroll"><table><thead><tr><th>Account</th><th>Client</th><th>Attempts</th>\
            <th>Next attempt</th><th>Last outcome</th></tr></thead><tbody>\(rows)</tbody></table></div></section>
            """
        return (panel, try await store.pendingAppleRevocationCount())
    }

    /// The overview's first panel: what needs an operator now, each item linked to its detail, or that nothing does.
    private func attentionPanel(revocations: Int, refused: Int) -> String {
        var items: [String] = []
        if let first = keys.appleHealth.failing.first {
            items.append(
                "<li><span class=\"badge warn\">Apple</span> Apple refuses siwa's client secret for "
                    + "<code>\(HTMLPage.escape(first.clientID.rawValue))</code> since \(Self.time(first.since)): "
                    + "<a href=\"#keys\">keys and credentials</a></li>"
            )
        }
        if revocations > 0 {
            items.append(
                "<li><span class=\"badge warn\">Revocations</span> \(revocations) deleted "
                    + "\(revocations == 1 ? "account's" : "accounts'") Apple token not confirmed revoked: "
                    + "<a href=\"#revocations\">the queue</a></li>"
            )
        }
        if refused > 0 {
            items.append(
                "<li><span class=\"badge\">Refusals</span> \(refused) refused sign-in\(refused == 1 ? "" : "s") in "
                    + "the last hour: <a href=\"#refused\">by reason</a></li>"
            )
        }
        let list =
            items.isEmpty
            ? "<p class=\"muted\">Nothing needs attention: Apple accepts siwa's credentials, no revocation waits "
                + "and no sign-in was refused in the last hour.</p>"
            : "<ul class=\"attention\">\(items.joined())</ul>"
        return "<section class=\"panel\" id=\"attention\"><h2>Needs attention</h2>\(list)</section>"
    }

    /// The sign-ins refused in the last hour, by reason (from the audit log; the first 500 counted).
    private func refusedLastHour() async throws -> (panel: String, total: Int) {
        let limit = 500
        var filter = AuditEventFilter()
        filter.types = [.signInRefused]
        filter.since = clock.now.addingTimeInterval(-3_600)
        let page = try await store.auditEvents(filter, limit: limit, after: nil)
        guard !page.items.isEmpty else { return ("", 0) }
        var byReason: [String: Int] = [:]
        for event in page.items { byReason[event.reason ?? "unknown", default: 0] += 1 }
        let rows = byReason.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { reason, count in
            """
            <tr><td><code>\(HTMLPage.escape(reason))</code></td><td class="number">\(count)</td></tr>
            """
        }.joined()
        let more = page.next == nil ? "" : " (the first \(limit) counted)"
        let panel = """
            <section class="panel" id="refused"><h2>Refused sign-ins in the last hour</h2>\
            <p><a href="/admin/audit?type=sign_in_refused&amp;period=1h">In the audit log</a>\(more)</p>\
            <div class="scroll"><table><thead><tr><th>Reason</th><th class="number">Sign-ins</th></tr></thead>\
            <tbody>\(rows)</tbody></table></div></section>
            """
        return (panel, page.items.count)
    }

    /// The last actions of admins and operators on accounts and roles, in the audit log's words.
    private func recentAdminActions() async throws -> String {
        var filter = AuditEventFilter()
        filter.types = [
            .sessionEnded, .accountDisabled, .accountEnabled, .accountDeleted, .adminGranted, .adminRevoked,
            .adminTokenCreated, .adminTokenRevoked,
        ]
        let events = try await store.auditEvents(filter, limit: 100, after: nil).items.filter {
            switch $0.actor {
            case .admin, .serviceToken, .operator: true
            default: false
            }
        }.prefix(8)
        let body: String
        if events.isEmpty {
            body = "<p class=\"muted\">No admin or operator has acted on an account yet.</p>"
        } else {
            let people = try await people(in: Array(events))
            body = """
                <div class="scroll"><table><thead><tr><th>Time (UTC)</th><th>Event</th><th>Account</th><th>By</th>\
                <th>Details</th></tr></thead><tbody>\(events.map { auditRow($0, people) }.joined())</tbody></table></div>
                """
        }
        return """
            <section class="panel" id="admin-actions"><h2>Recent admin actions</h2>\(body)\
            <p><a href="/admin/audit">The whole audit log</a></p></section>
            """
    }

    // MARK: Keys and credentials

    /// The banner of every page while Apple refuses siwa's client secret, with what to do; `nil` otherwise.
    static func appleBanner(_ failing: [AppleCredentialHealth.Refusal]) -> String? {
        guard let first = failing.first else { return nil }
        let clients = failing.map { "<code>\(HTMLPage.escape($0.clientID.rawValue))</code>" }.joined(separator: ", ")
        return """
            <p class="notice error" id="apple-credentials-failing" role="alert"><strong>Apple refuses siwa's client \
            secret</strong> (<code>invalid_client</code> since \(time(first.since)), first at \
            <code>\(first.call.rawValue)</code>) for \(clients): code exchanges, token validations and revocations \
            fail until it is fixed. Check <code>SIWA_KEY_ID</code> and the <code>.p8</code> key under Keys in the \
            Apple developer portal (a revoked key fails this way) and <code>SIWA_TEAM_ID</code>, then run \
            <code>siwa doctor --apple</code>.</p>
            """
    }

    /// Every page's banners: Apple's refusal and disabled webhook endpoints; `nil` while neither.
    static func banners(
        _ apple: [AppleCredentialHealth.Refusal],
        _ webhooks: [WebhookHealth.Disabled]
    ) -> String? {
        let banners = [appleBanner(apple), webhookBanner(webhooks)].compactMap { $0 }
        return banners.isEmpty ? nil : banners.joined()
    }

    /// The banner of every page while a webhook endpoint is disabled for failing too long; `nil` otherwise.
    static func webhookBanner(_ disabled: [WebhookHealth.Disabled]) -> String? {
        guard !disabled.isEmpty else { return nil }
        let names = disabled.map { "<code>\(HTMLPage.escape($0.name))</code> (since \(time($0.since)))" }
            .joined(separator: ", ")
        return """
            <p class="notice error" id="webhooks-disabled" role="alert"><strong>Webhook endpoints disabled</strong>: \
            \(names) failed every attempt for too long, and the app's backend hears no events from siwa. Their \
            deliveries wait: fix the endpoint, then run <code>siwa webhooks enable NAME</code>.</p>
            """
    }

    /// The overview's panel: whether Apple accepts siwa's client secret, and the age of siwa's signing key and of the
    /// data key.
    private func keysPanel() async throws -> String {
        let now = clock.now
        func age(_ date: Date) -> String {
            let days = Int(now.timeIntervalSince(date) / 86_400)
            return "\(Self.time(date)) (\(days <= 0 ? "today" : days == 1 ? "1 day ago" : "\(days) days ago"))"
        }
        let apple: String
        if !keys.appleCredentialsConfigured {
            apple = "<span class=\"badge muted\">not configured</span> no team, key id or key: no code exchange"
        } else if let first = keys.appleHealth.failing.first {
            apple =
                "<span class=\"badge warn\">refused</span> <code>invalid_client</code> since \(Self.time(first.since))"
        } else {
            apple =
                "<span class=\"badge\">not refused</span> no <code>invalid_client</code> from Apple since this "
                + "instance started or Apple last accepted its client secret"
        }
        let signing: String
        if let current = try await store.signingKeys().last(where: { $0.retiredAt == nil }) {
            signing = "<code>\(HTMLPage.escape(current.kid))</code>, created \(age(current.createdAt))"
        } else {
            signing = "none yet"
        }
        let dataKeyAge: String
        switch keys.sealer.source {
        case .file(let path):
            dataKeyAge =
                FileStamp(path).map { "its key file last changed \(age($0.modified))" } ?? "its key file cannot be read"
        case .setting(let name):
            dataKeyAge = "set by <code>\(HTMLPage.escape(name))</code>: its age is not known"
        }
        return """
            <section class="panel" id="keys"><h2>Keys and credentials</h2><dl>\
            <dt>Apple credentials</dt><dd id="apple-credentials">\(apple)</dd>\
            <dt>siwa's signing key</dt><dd id="signing-key">\(signing)</dd>\
            <dt>Data key</dt><dd id="data-key"><code>\(keys.sealer.keys.primary.id)</code>; \(dataKeyAge)</dd>\
            </dl></section>
            """
    }

    // MARK: Formatting

    static func time(_ date: Date) -> String {
        let text = date.formatted(.iso8601)
        return
            "<time datetime=\"\(text)\">\(text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: ""))</time>"
    }

    static func status(_ status: UserStatus) -> String {
        switch status {
        case .active: "<span class=\"badge\">active</span>"
        case .disabled: "<span class=\"badge warn\">disabled</span>"
        case .consentRevoked: "<span class=\"badge muted\">consent revoked</span>"
        case .deleted: "<span class=\"badge muted\">deleted</span>"
        }
    }

    static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}

extension RouteAccess.Refusal {
    /// The console's: the sign-in for a browser without a session, else an HTML page naming why.
    static let consolePage = RouteAccess.Refusal(name: "HTML page (sign-in redirect without a session)") {
        error,
        request in
        AdminConsoleController.refusal(for: request, error)
    }
}
