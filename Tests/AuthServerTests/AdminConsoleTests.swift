import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// The console's pages over HTTP: the gate (sign-in redirect, 403 for non-admins), the pages' content, and the
/// forms' protections (this site's Origin, the session's form token, a ticked confirmation).
@Suite("Admin console pages")
struct AdminConsoleTests {
    struct Page {
        var status: HTTPResponse.Status
        var html: String
        var headers: HTTPFields
    }

    private static func get(_ server: ServerHarness, _ path: String, bearer: String? = nil) async throws -> Page {
        var headers: HTTPFields = [:]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        let response = try await server.server.execute(uri: path, method: .get, headers: headers, body: nil)
        return Page(status: response.status, html: String(buffer: response.body), headers: response.headers)
    }

    private static func post(
        _ server: ServerHarness,
        _ path: String,
        form: [(String, String)],
        bearer: String,
        origin: String? = "http://localhost:8080"
    ) async throws -> Page {
        var headers: HTTPFields = [
            .authorization: "Bearer \(bearer)", .contentType: "application/x-www-form-urlencoded",
        ]
        if let origin { headers[.origin] = origin }
        let body = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
            .joined(separator: "&")
        let response = try await server.server.execute(
            uri: path,
            method: .post,
            headers: headers,
            body: ByteBuffer(string: body)
        )
        return Page(status: response.status, html: String(buffer: response.body), headers: response.headers)
    }

    private static func signIn(_ server: ServerHarness, _ email: String) async throws -> (token: String, id: UserID) {
        let answer = try await server.signIn(email)
        return (
            try #require(answer.json.string("accessToken")),
            try #require(answer.json.user.string("id").flatMap(UserID.init))
        )
    }

    @Test func withoutASessionTheBrowserIsSentThroughTheSignIn() async throws {
        try await ServerHarness.run { server in
            let page = try await Self.get(server, "/admin/users?q=ann")
            #expect(page.status == .seeOther)
            #expect(page.headers[.location] == "/auth/apple/authorize?returnUrl=%2Fadmin%2Fusers%3Fq%3Dann")
        }
    }

    /// The admin's session cookie on a form posted from another site (or with no Origin or Referer): a 403 page naming
    /// the CSRF check, nothing done, and no detour through the sign-in (which would come back to the form's address).
    @Test func aFormPostedWithTheSessionCookieFromAnotherSiteIsRefusedWithAPage() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let user = try await Self.signIn(server, "target@example.com")
            // With this session's own form token, so that only the origin checks can refuse the post.
            let detail = try await Self.get(server, "/admin/users/\(user.id)", bearer: admin.token)
            let marker = "name=\"token\" value=\""
            let start = try #require(detail.html.range(of: marker)).upperBound
            let token = String(detail.html[start...].prefix(43))
            for origin in ["https://evil.example", nil] {
                var headers: HTTPFields = [
                    .cookie: "siwa_session=\(admin.token)", .contentType: "application/x-www-form-urlencoded",
                ]
                if let origin { headers[.origin] = origin }
                let response = try await server.server.execute(
                    uri: "/admin/users/\(user.id)/disable",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: "token=\(token)&confirm=yes")
                )
                #expect(response.status == .forbidden, "origin \(origin ?? "none")")
                #expect(!String(buffer: response.body).contains("reload the page"), "refused for its origin")
                #expect(response.headers[.location] == nil)
                #expect(String(buffer: response.body).contains("csrf_check_failed"))
            }
            #expect(try await server.store.user(id: user.id)?.disabledAt == nil, "nothing changed")
        }
    }

    @Test func aUserWithoutTheRoleGetsA403PageSayingSo() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "curious@example.com")
            for path in ["/admin", "/admin/users", "/admin/users/\(user.id)", "/admin/audit"] {
                let page = try await Self.get(server, path, bearer: user.token)
                #expect(page.status == .forbidden, "\(path)")
                #expect(page.html.contains("does not hold the admin role"))
                #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            }
            let act = try await Self.post(
                server,
                "/admin/users/\(user.id)/disable",
                form: [("confirm", "yes")],
                bearer: user.token
            )
            #expect(act.status == .forbidden)
            #expect(try await server.store.user(id: user.id)?.disabledAt == nil)
        }
    }

    @Test func theAdminSeesTheOverviewUsersAUserAndTheAuditLog() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let user = try await Self.signIn(server, "ann <b>@example.com")

            let overview = try await Self.get(server, "/admin", bearer: admin.token)
            #expect(overview.status == .ok)
            #expect(overview.html.contains("<svg class=\"chart\""))
            #expect(overview.html.contains("Sign-ins per day by channel"))
            #expect(overview.html.contains("<th scope=\"col\">native</th>"), "the numbers table names the channel")
            #expect(!overview.html.contains("<script"))
            #expect(overview.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)

            let users = try await Self.get(server, "/admin/users?q=ann", bearer: admin.token)
            #expect(users.html.contains("href=\"/admin/users/\(user.id)\""))
            #expect(users.html.contains("ann &lt;b&gt;@example.com"), "escaped")
            #expect(!users.html.contains("href=\"/admin/users/\(admin.id)\""), "only the accounts that match")

            let detail = try await Self.get(server, "/admin/users/\(user.id)", bearer: admin.token)
            #expect(detail.status == .ok)
            #expect(detail.html.contains("<td>native</td>"), "the session's channel")
            #expect(detail.html.contains("name=\"token\""))

            let audit = try await Self.get(server, "/admin/audit?user=\(user.id)&type=sign_in", bearer: admin.token)
            #expect(audit.html.contains("<td>Signed in</td>"))
            #expect(audit.html.contains("via native"))

            // A filter the page cannot read is a 400 naming it, never a filter quietly left out.
            for query in ["type=nonsense", "user=not-an-id", "since=yesterday"] {
                let refused = try await Self.get(server, "/admin/audit?\(query)", bearer: admin.token)
                #expect(refused.status == .badRequest, "\(query)")
                let name = String(query.prefix { $0 != "=" })
                #expect(refused.html.contains("&#39;\(name)&#39;"), "the page names the parameter: \(name)")
            }
        }
    }

    /// Another admin's account, seen by an admin granted the role in the store: the page offers no button the server
    /// would refuse (no session's End, no End all, no Disable, no Delete); its own account's sessions keep theirs.
    @Test func aProtectedAdminsPageOffersNoActionTheServerWouldRefuse() async throws {
        try await ServerHarness.run { server in
            let viewer = try await Self.signIn(server, "viewer@example.com")
            let other = try await Self.signIn(server, "other-admin@example.com")
            for admin in [viewer.id, other.id] {
                try await server.store.grantAdmin(AdminSubject(admin), by: .operator, now: Date())
            }
            let page = try await Self.get(server, "/admin/users/\(other.id)", bearer: viewer.token)
            #expect(page.status == .ok)
            #expect(page.html.contains("<td>native</td>"), "its session is listed")
            #expect(page.html.contains("<td>active</td>"))
            for action in ["end-session", "end-all", "disable", "delete"] {
                #expect(!page.html.contains("/admin/users/\(other.id)/\(action)\""), "a form for \(action)")
            }
            let own = try await Self.get(server, "/admin/users/\(viewer.id)", bearer: viewer.token)
            #expect(own.html.contains("/admin/users/\(viewer.id)/end-session\""), "its own sessions keep their End")
        }
    }

    @Test func aFormNeedsThisSitesOriginTheSessionsTokenAndAConfirmation() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let user = try await Self.signIn(server, "target@example.com")
            let detail = try await Self.get(server, "/admin/users/\(user.id)", bearer: admin.token)
            let marker = "name=\"token\" value=\""
            let start = try #require(detail.html.range(of: marker)).upperBound
            let token = String(detail.html[start...].prefix(43))
            let path = "/admin/users/\(user.id)/disable"

            let crossSite = try await Self.post(
                server,
                path,
                form: [("token", token), ("confirm", "yes")],
                bearer: admin.token,
                origin: "https://evil.example"
            )
            #expect(crossSite.status == .forbidden)
            let noToken = try await Self.post(server, path, form: [("confirm", "yes")], bearer: admin.token)
            #expect(noToken.status == .forbidden)
            #expect(noToken.html.contains("reload the page"))
            let unconfirmed = try await Self.post(server, path, form: [("token", token)], bearer: admin.token)
            #expect(unconfirmed.status == .badRequest)
            #expect(try await server.store.user(id: user.id)?.disabledAt == nil, "nothing changed so far")

            let done = try await Self.post(
                server,
                path,
                form: [("token", token), ("confirm", "yes")],
                bearer: admin.token
            )
            #expect(done.status == .seeOther)
            #expect(done.headers[.location] == "/admin/users/\(user.id)?done=account%20disabled")
            #expect(try await server.store.user(id: user.id)?.disabledAt != nil)
            #expect(try await server.signIn("target@example.com").status == .forbidden)
        }
    }

    /// The console answers "what happened to this user" at a glance: events in words naming people (the account and
    /// the admin by name or email, linked), filters with labels and relative periods, and an overview that leads
    /// with what needs action.
    @Test func theConsoleNamesPeopleAndLeadsWithWhatNeedsAttention() async throws {
        try await ServerHarness.run { server in
            let quiet = try await Self.get(server, "/admin", bearer: try await Self.admin(server, "first@example.com"))
            #expect(quiet.html.contains("Nothing needs attention"))
            #expect(quiet.html.contains("No data yet"), "an empty chart says so")

            let admin = try await Self.signIn(server, "ada@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let user = try await Self.signIn(server, "bob@example.com")
            let refused = try await server.call(.post, "/auth/apple/native", json: ["identityToken": "not.a.token"])
            #expect(refused.status == .unauthorized)
            let detail = try await Self.get(server, "/admin/users/\(user.id)", bearer: admin.token)
            let marker = "name=\"token\" value=\""
            let start = try #require(detail.html.range(of: marker)).upperBound
            let token = String(detail.html[start...].prefix(43))
            // Deleting is set apart from the routine actions, after the sessions.
            let danger = try #require(detail.html.range(of: "class=\"panel danger-zone\""))
            #expect(detail.html.range(of: "/delete\"")!.lowerBound > danger.lowerBound)
            #expect(detail.html.range(of: "/disable\"")!.lowerBound < danger.lowerBound)
            let disabled = try await Self.post(
                server,
                "/admin/users/\(user.id)/disable",
                form: [("token", token), ("confirm", "yes")],
                bearer: admin.token
            )
            #expect(disabled.status == .seeOther)

            let audit = try await Self.get(server, "/admin/audit?user=bob%40example.com&period=1h", bearer: admin.token)
            #expect(audit.status == .ok)
            #expect(audit.html.contains("<td>Account disabled</td>"), "events in words")
            #expect(audit.html.contains("<td>Signed in</td>"))
            #expect(audit.html.contains("<a href=\"/admin/users/\(user.id)\">bob@example.com</a>"), "the account")
            #expect(
                audit.html.contains("admin <a href=\"/admin/users/\(admin.id)\">ada@example.com</a>"),
                "the admin who acted"
            )
            #expect(audit.html.contains("session started <code>"), "the session a sign-in started")
            #expect(audit.html.contains("<label>Period<select name=\"period\">"), "filters have labels")
            #expect(audit.html.contains("<option value=\"1h\" selected>Last hour</option>"))
            #expect(!audit.html.contains("first@example.com"), "only bob's events")
            let badPeriod = try await Self.get(server, "/admin/audit?period=1y", bearer: admin.token)
            #expect(badPeriod.status == .badRequest)
            #expect(badPeriod.html.contains("&#39;period&#39;"))
            let nobody = try await Self.get(server, "/admin/audit?user=nobody%40example.com", bearer: admin.token)
            #expect(nobody.html.contains("No account has the email nobody@example.com"))

            let overview = try await Self.get(server, "/admin", bearer: admin.token)
            let attention = try #require(overview.html.range(of: "<h2>Needs attention</h2>"))
            #expect(attention.lowerBound < overview.html.range(of: "class=\"cards\"")!.lowerBound, "it leads")
            #expect(overview.html.contains("1 refused sign-in in the last hour"))
            #expect(overview.html.contains("<h2>Refused sign-ins in the last hour</h2>"))
            #expect(overview.html.contains("<h2>Recent admin actions</h2>"))
            #expect(overview.html.contains("<td>Account disabled</td>"))
            #expect(overview.html.contains("<footer>siwa \(SiwaVersion.current)</footer>"), "the version")
            #expect(overview.html.contains("Signed in as <strong>ada@example.com</strong>"))
            #expect(overview.html.contains("admin (granted)"))
            #expect(overview.html.contains("<form method=\"post\" action=\"/auth/logout\">"), "a sign-out")
        }
    }

    /// A signed-in account without the role sees why and a way out, not the console's sections nor how an operator
    /// would grant the role.
    @Test func aNonAdminsRefusalShowsNoConsole() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "curious@example.com")
            let page = try await Self.get(server, "/admin", bearer: user.token)
            #expect(page.status == .forbidden)
            #expect(!page.html.contains("<nav"))
            #expect(!page.html.contains("/admin/users"))
            #expect(!page.html.contains("grant-admin"))
            #expect(!page.html.contains("SIWA_ADMIN_USERS"))
            #expect(page.html.contains("action=\"/auth/logout\""), "a way out")
        }
    }

    /// The service tokens' page lists every token without its secret, and its form (this site's origin, the session's
    /// form token, a ticked box) revokes one, recorded as done by the admin.
    @Test func theConsoleListsServiceTokensAndRevokesOne() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let secret = try await ServiceTokens.create(
                name: "ops-bot",
                scope: .write,
                lifetimeDays: 30,
                by: .operator,
                in: server.store,
                now: server.clock.now
            ).secret
            let page = try await Self.get(server, "/admin/tokens", bearer: admin.token)
            #expect(page.status == .ok)
            #expect(page.html.contains("<code>ops-bot</code>") && page.html.contains("active"))
            #expect(!page.html.contains(secret))
            let marker = "name=\"token\" value=\""
            let start = try #require(page.html.range(of: marker)).upperBound
            let token = String(page.html[start...].prefix(43))

            let crossSite = try await Self.post(
                server,
                "/admin/tokens/revoke",
                form: [("token", token), ("name", "ops-bot"), ("confirm", "yes")],
                bearer: admin.token,
                origin: "https://evil.example"
            )
            #expect(crossSite.status == .forbidden)
            let noFormToken = try await Self.post(
                server,
                "/admin/tokens/revoke",
                form: [("name", "ops-bot"), ("confirm", "yes")],
                bearer: admin.token
            )
            #expect(noFormToken.status == .forbidden)
            #expect(try await server.call(.get, "/admin/api/users", bearer: secret).status == .ok, "still active")

            let done = try await Self.post(
                server,
                "/admin/tokens/revoke",
                form: [("token", token), ("name", "ops-bot"), ("confirm", "yes")],
                bearer: admin.token
            )
            #expect(done.status == .seeOther)
            #expect(done.headers[.location] == "/admin/tokens?done=token%20ops%2Dbot%20revoked")
            let refused = try await server.call(.get, "/admin/api/users", bearer: secret)
            #expect(refused.json.string("error") == "service_token_revoked")
            let events = try await server.store.auditEvents(
                AuditEventFilter(types: [.adminTokenRevoked]),
                limit: 10,
                after: nil
            ).items
            #expect(events.map(\.actor) == [.admin(AdminSubject(admin.id))])
            #expect(try await Self.get(server, "/admin/tokens", bearer: admin.token).html.contains("revoked"))
        }
    }

    /// An admin's access token, granted before.
    private static func admin(_ server: ServerHarness, _ email: String) async throws -> String {
        let admin = try await signIn(server, email)
        try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
        return admin.token
    }
}
