import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The admin API (`/admin/api/`): who may call it, and each operation end to end against the emulator.
@Suite("Admin API")
struct AdminAPITests {
    /// Signs in `email` and returns its access token and siwa id.
    private static func signIn(_ server: ServerHarness, _ email: String) async throws -> (token: String, id: UserID) {
        let answer = try await server.signIn(email)
        #expect(answer.status == .ok, "sign-in of \(email): \(answer.json)")
        let token = try #require(answer.json.string("accessToken"))
        let id = try #require(answer.json.user.string("id").flatMap(UserID.init))
        return (token, id)
    }

    /// An admin granted in the store (as `siwa users grant-admin` does).
    private static func admin(_ server: ServerHarness) async throws -> String {
        let admin = try await signIn(server, "admin@example.com")
        try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
        return admin.token
    }

    @Test func noTokenIs401AndNoRoleIs403() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "someone@example.com")
            for path in ["/admin/api/users", "/admin/api/audit", "/admin/api/stats", "/admin/api/users/\(user.id)"] {
                #expect(try await server.call(.get, path).status == .unauthorized, "\(path) without a token")
                let refused = try await server.call(.get, path, bearer: user.token)
                #expect(refused.status == .forbidden, "\(path) for a user without the role")
                #expect(refused.json.string("error") == "admin_required")
            }
            let disable = try await server.call(.post, "/admin/api/users/\(user.id)/disable", bearer: user.token)
            #expect(disable.status == .forbidden)
            #expect(try await server.store.user(id: user.id)?.disabledAt == nil, "a refused call changes nothing")
            #expect(try await server.call(.get, "/admin/api/users", bearer: "not-a-token").status == .unauthorized)
        }
    }

    @Test func theAPITakesABearerTokenNotTheSessionCookie() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let user = try await Self.signIn(server, "cookie-target@example.com")
            let cookie = AuthServerConfiguration().web.sessionCookieName
            // The admin's browser cookie, as a same-site page's request would carry it: refused, nothing changes.
            let response = try await server.server.execute(
                uri: "/admin/api/users/\(user.id)/disable",
                method: .post,
                headers: [.cookie: "\(cookie)=\(token)", .origin: "http://localhost:8080"],
                body: nil
            )
            #expect(response.status == .unauthorized)
            #expect(try await server.store.user(id: user.id)?.disabledAt == nil)
            #expect(try await server.call(.get, "/admin/api/users", bearer: token).status == .ok)
        }
    }

    /// An admin granted the role in the store cannot end the sessions of, disable or delete another admin's account;
    /// an admin of the configuration (`SIWA_ADMIN_USERS`) can.
    @Test func onlyAConfiguredAdminActsOnAnotherAdmin() async throws {
        try await ServerHarness.run { server in
            let granted = try await Self.signIn(server, "granted@example.com")
            let other = try await Self.signIn(server, "other-admin@example.com")
            let plain = try await Self.signIn(server, "plain@example.com")
            let configured = try await Self.signIn(server, "configured-admin@example.com")
            for admin in [granted.id, other.id] {
                try await server.store.grantAdmin(AdminSubject(admin), by: .operator, now: Date())
            }
            for (method, path) in [
                (HTTPRequest.Method.post, "/admin/api/users/\(other.id)/disable"),
                (.post, "/admin/api/users/\(other.id)/sessions/end"),
                (.delete, "/admin/api/users/\(other.id)"),
            ] {
                let refused = try await server.call(method, path, bearer: granted.token)
                #expect(refused.status == .forbidden, "\(method) \(path): \(refused.json)")
                #expect(refused.json.string("error") == "admin_protected")
            }
            #expect(try await server.store.user(id: other.id)?.status == .active, "the other admin is untouched")
            let plainDisabled = try await server.call(
                .post,
                "/admin/api/users/\(plain.id)/disable",
                bearer: granted.token
            )
            #expect(plainDisabled.status == .ok, "a granted admin still acts on other accounts")

            var withRole = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
            withRole.compatibility.adminUsers = [configured.id.description.lowercased()]
            try await ServerHarness.run(store: server.store, configuration: withRole, dataKey: server.dataKey) {
                second in
                let byGranted = try await second.call(
                    .post,
                    "/admin/api/users/\(configured.id)/disable",
                    bearer: granted.token
                )
                #expect(byGranted.status == .forbidden, "a granted admin disabled a configured one")
                let byConfigured = try await second.call(
                    .post,
                    "/admin/api/users/\(other.id)/disable",
                    bearer: configured.token
                )
                #expect(byConfigured.status == .ok, "\(byConfigured.json)")
            }
        }
    }

    @Test func aConfiguredAdminHoldsTheRoleWithoutAGrant() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "configured@example.com")
            #expect(try await server.call(.get, "/admin/api/users", bearer: user.token).status == .forbidden)
            // A second server on the same store, with the account's siwa id in SIWA_ADMIN_USERS.
            var withRole = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
            withRole.compatibility.adminUsers = [user.id.description.lowercased()]
            try await ServerHarness.run(store: server.store, configuration: withRole, dataKey: server.dataKey) {
                second in
                let listed = try await second.call(.get, "/admin/api/users", bearer: user.token)
                #expect(listed.status == .ok, "\(listed.json)")
            }
        }
    }

    /// The session id (`sid`) inside an access token.
    static func sessionID(_ accessToken: String) throws -> String {
        let payload = try #require(accessToken.split(separator: ".").dropFirst().first)
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        let claims = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(claims["sid"] as? String)
    }

    @Test func searchPagesThroughUsersByEmailPrefix() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            for name in ["ann", "anna", "annie", "bob"] { _ = try await Self.signIn(server, "\(name)@example.com") }
            let first = try await server.call(.get, "/admin/api/users?query=ANN&limit=2", bearer: token)
            #expect(first.status == .ok)
            let page1 = first.json["users"] as? [[String: Any]] ?? []
            #expect(page1.count == 2)
            let next = try #require(first.json.string("next"))
            let second = try await server.call(.get, "/admin/api/users?query=ann&limit=2&after=\(next)", bearer: token)
            let page2 = second.json["users"] as? [[String: Any]] ?? []
            let emails = (page1 + page2).compactMap { $0["email"] as? String }
            #expect(Set(emails) == ["ann@example.com", "anna@example.com", "annie@example.com"])
            #expect(emails.count == 3, "no user twice across pages")
            #expect(page1.first?["status"] as? String == "active")
            let bad = try await server.call(.get, "/admin/api/users?after=%25%25", bearer: token)
            #expect(bad.status == .badRequest)
            #expect(bad.json.string("error") == "invalid_field")
            #expect(try await server.call(.get, "/admin/api/users?limit=0", bearer: token).status == .badRequest)
            #expect(try await server.call(.get, "/admin/api/users/nope", bearer: token).status == .badRequest)
            #expect(try await server.call(.get, "/admin/api/users/\(UserID())", bearer: token).status == .notFound)
        }
    }

    @Test func endingOneSessionLeavesTheOtherWorking() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let phone = try await Self.signIn(server, "two-devices@example.com")
            let laptop = try await Self.signIn(server, "two-devices@example.com")
            #expect(phone.id == laptop.id)
            let listed = try await server.call(.get, "/admin/api/users/\(phone.id)/sessions", bearer: token)
            let sessions = listed.json["sessions"] as? [[String: Any]] ?? []
            #expect(sessions.count == 2)
            #expect(sessions.allSatisfy { $0["channel"] as? String == "native" && $0["active"] as? Bool == true })
            let sessionID = try Self.sessionID(phone.token)
            #expect(sessions.contains { $0["id"] as? String == sessionID })
            let ended = try await server.call(
                .post,
                "/admin/api/users/\(phone.id)/sessions/end",
                json: ["sessionId": sessionID],
                bearer: token
            )
            #expect(ended.status == .ok, "\(ended.json)")
            #expect(try await server.call(.get, "/api/me", bearer: phone.token).status == .unauthorized)
            #expect(try await server.call(.get, "/api/me", bearer: laptop.token).status == .ok)
            let foreign = try await server.call(
                .post,
                "/admin/api/users/\(phone.id)/sessions/end",
                json: ["sessionId": SessionID().description],
                bearer: token
            )
            #expect(foreign.status == .notFound)
            let all = try await server.call(.post, "/admin/api/users/\(phone.id)/sessions/end", bearer: token)
            #expect((all.json["endedSessions"] as? [String])?.count == 1)
            #expect(try await server.call(.get, "/api/me", bearer: laptop.token).status == .unauthorized)
        }
    }

    /// A member a route does not know is a 400 naming it, never "every session": a script that misspells `sessionId`
    /// must not sign the user out everywhere. Only an empty body or `{}` means every session.
    @Test func anAdminBodyWithAMemberTheRouteDoesNotKnowIsRefused() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let phone = try await Self.signIn(server, "strict@example.com")
            let laptop = try await Self.signIn(server, "strict@example.com")
            let sessionID = try Self.sessionID(phone.token)
            for member in ["sessionID", "session_id", "SessionId", "id", "sessionid"] {
                let refused = try await server.call(
                    .post,
                    "/admin/api/users/\(phone.id)/sessions/end",
                    rawBody: #"{"\#(member)":"\#(sessionID)"}"#,
                    bearer: token
                )
                #expect(refused.status == .badRequest, "\(member): \(refused.json)")
                #expect(refused.json.string("error") == "unknown_field")
                #expect(refused.json.string("message")?.contains("sessionId") == true, "names what it takes")
            }
            #expect(try await server.call(.get, "/api/me", bearer: phone.token).status == .ok, "no session ended")
            #expect(try await server.call(.get, "/api/me", bearer: laptop.token).status == .ok, "no session ended")
            for path in ["disable", "enable"] {
                let refused = try await server.call(
                    .post,
                    "/admin/api/users/\(phone.id)/\(path)",
                    json: ["reason": "stolen phone"],
                    bearer: token
                )
                #expect(refused.status == .badRequest, "\(path): \(refused.json)")
                #expect(refused.json.string("message")?.contains("'reason'") == true, "\(refused.json)")
            }
            let deleted = try await server.call(
                .delete,
                "/admin/api/users/\(phone.id)",
                json: ["force": true],
                bearer: token
            )
            #expect(deleted.status == .badRequest)
            #expect(try await server.store.user(id: phone.id)?.status == .active)
            let all = try await server.call(
                .post,
                "/admin/api/users/\(phone.id)/sessions/end",
                rawBody: "{}",
                bearer: token
            )
            #expect(all.status == .ok)
            #expect((all.json["endedSessions"] as? [String])?.count == 2, "{} is every session")
        }
    }

    @Test func aSessionKeepsTheUserAgentAndAddressItWasStartedFrom() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let credential = try await server.appleCredential("agent@example.com")
            let body = try JSONSerialization.data(withJSONObject: [
                "identityToken": credential["identityToken"] as? String ?? "",
                "authorizationCode": credential["authorizationCode"] as? String ?? "",
            ])
            let response = try await server.server.execute(
                uri: "/auth/apple/native",
                method: .post,
                headers: [.contentType: "application/json", .userAgent: "MyApp/2.1 (iPhone; iOS 19.0)"],
                body: ByteBuffer(bytes: body)
            )
            #expect(response.status == .ok)
            let user = try #require(try await server.store.users(email: "agent@example.com").first)
            let listed = try await server.call(.get, "/admin/api/users/\(user.id)/sessions", bearer: token)
            let session = try #require((listed.json["sessions"] as? [[String: Any]])?.first)
            #expect(session["userAgent"] as? String == "MyApp/2.1 (iPhone; iOS 19.0)")
            #expect(session["clientAddress"] as? String == "127.0.0.1")
            #expect(session["channel"] as? String == "native")
        }
    }

    /// Behind a trusted proxy whose own entry is not a bare address, the session keeps that entry (read as its address
    /// when it has a port), never the address a client wrote to its left.
    @Test func behindAProxyASessionKeepsTheProxysEntryNotOneAClientWroteLeftOfIt() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        try await ServerHarness.run(configuration: configuration) { server in
            let token = try await Self.admin(server)
            for (index, (forwardedFor, kept)) in [
                ("203.0.113.66, unknown", "unknown"), ("203.0.113.66, 198.51.100.4:5555", "198.51.100.4"),
            ].enumerated() {
                let email = "proxied\(index)@example.com"
                let credential = try await server.appleCredential(email)
                let body = try JSONSerialization.data(withJSONObject: [
                    "identityToken": credential["identityToken"] as? String ?? ""
                ])
                let response = try await server.server.execute(
                    uri: "/auth/apple/native",
                    method: .post,
                    headers: [.contentType: "application/json", HTTPField.Name("X-Forwarded-For")!: forwardedFor],
                    body: ByteBuffer(bytes: body)
                )
                #expect(response.status == .ok)
                let user = try #require(try await server.store.users(email: email).first)
                let listed = try await server.call(.get, "/admin/api/users/\(user.id)/sessions", bearer: token)
                let session = try #require((listed.json["sessions"] as? [[String: Any]])?.first)
                #expect(session["clientAddress"] as? String == kept, "\(forwardedFor)")
            }
        }
    }

    @Test func disableRefusesSignInUntilEnabledAndDeleteRevokesAtApple() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let user = try await Self.signIn(server, "troubled@example.com")
            let disabled = try await server.call(.post, "/admin/api/users/\(user.id)/disable", bearer: token)
            #expect(disabled.status == .ok)
            #expect(disabled.json.string("status") == "disabled")
            #expect(try await server.call(.get, "/api/me", bearer: user.token).status == .unauthorized)
            let refused = try await server.signIn("troubled@example.com")
            #expect(refused.status == .forbidden)
            #expect(refused.json.string("error") == "account_disabled")
            let recorded = try await server.call(
                .get,
                "/admin/api/audit?user=\(user.id)&type=account_disabled,session_ended",
                bearer: token
            )
            let events = recorded.json["events"] as? [[String: Any]] ?? []
            #expect(Set(events.compactMap { $0["type"] as? String }) == ["account_disabled", "session_ended"])
            #expect(events.allSatisfy { $0["actor"] as? String == "admin" && $0["actorSubject"] as? String != nil })
            let enabled = try await server.call(.post, "/admin/api/users/\(user.id)/enable", bearer: token)
            #expect(enabled.json.string("status") == "active")
            #expect(try await server.signIn("troubled@example.com").status == .ok)

            let deleted = try await server.call(.delete, "/admin/api/users/\(user.id)", bearer: token)
            #expect(deleted.status == .ok, "\(deleted.json)")
            let revocations = try await server.emulatorLog().filter { $0["endpoint"] as? String == "revoke" }
            #expect(!revocations.isEmpty, "the emulator recorded Apple's revocation")
            let again = try await server.call(.get, "/admin/api/users/\(user.id)", bearer: token)
            #expect(again.status == .notFound || again.json.user.string("status") == "deleted")
        }
    }

    @Test func anAdminCannotDisableOrDeleteTheirOwnAccount() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let me = try #require(try await server.store.users(email: "admin@example.com").first?.id)
            #expect(try await server.call(.post, "/admin/api/users/\(me)/disable", bearer: token).status == .badRequest)
            #expect(try await server.call(.delete, "/admin/api/users/\(me)", bearer: token).status == .badRequest)
        }
    }

    @Test func auditAndStatsCountTheSignIns() async throws {
        try await ServerHarness.run { server in
            let token = try await Self.admin(server)
            let user = try await Self.signIn(server, "counted@example.com")
            _ = try await Self.signIn(server, "counted@example.com")
            let audit = try await server.call(.get, "/admin/api/audit?user=\(user.id)&type=sign_in", bearer: token)
            #expect(audit.status == .ok)
            let events = audit.json["events"] as? [[String: Any]] ?? []
            #expect(events.count == 2)
            #expect(
                events.allSatisfy { $0["channel"] as? String == "native" && $0["userID"] as? String == "\(user.id)" }
            )
            let badType = try await server.call(.get, "/admin/api/audit?type=login", bearer: token)
            #expect(badType.status == .badRequest)
            #expect(badType.json.string("message")?.contains("sign_in") == true, "the message lists the known types")
            #expect(
                try await server.call(.get, "/admin/api/audit?since=yesterday", bearer: token).status == .badRequest
            )

            let stats = try await server.call(.get, "/admin/api/stats?days=7", bearer: token)
            #expect(stats.status == .ok)
            #expect((stats.json["days"] as? [String])?.count == 7)
            let native = (stats.json["signInsByChannel"] as? [String: [Int]])?["native"] ?? []
            #expect(native.reduce(0, +) == 3, "the admin's sign-in and the user's two")
            #expect((stats.json["newAccounts"] as? [Int])?.reduce(0, +) == 2)
            let accounts = stats.json["accounts"] as? [String: Int] ?? [:]
            #expect(accounts["total"] == 2 && accounts["newLast24Hours"] == 2)
            #expect(try await server.call(.get, "/admin/api/stats?days=0", bearer: token).status == .badRequest)
        }
    }
}
