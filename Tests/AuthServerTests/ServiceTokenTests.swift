import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import SiwaTesting
import Synchronization
import Testing

/// The admin API's service tokens (`siwa admin tokens`): read and write scope, expiry, revocation, refusal everywhere
/// but `/admin/api/`, and the audit log and answers naming the token that acted.
@Suite("Admin API: service tokens")
struct ServiceTokenTests {
    private static let actingCredential = HTTPField.Name("Siwa-Acting-Credential")!

    /// A new token in the server's store, as `siwa admin tokens create` makes it.
    private static func token(
        _ server: ServerHarness,
        _ name: String,
        _ scope: AdminTokenScope,
        days: Int = 30
    ) async throws -> String {
        try await ServiceTokens.create(
            name: name,
            scope: scope,
            lifetimeDays: days,
            by: .operator,
            in: server.store,
            now: server.clock.now
        ).secret
    }

    private static func signIn(_ server: ServerHarness, _ email: String) async throws -> (token: String, id: UserID) {
        let answer = try await server.signIn(email)
        let token = try #require(answer.json.string("accessToken"))
        let id = try #require(answer.json.user.string("id").flatMap(UserID.init))
        return (token, id)
    }

    @Test func aReadTokenReadsButCannotAct() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "read-target@example.com")
            let secret = try await Self.token(server, "nightly-report", .read)
            #expect(secret.hasPrefix("siwa_at_"))
            for path in ["/admin/api/users", "/admin/api/users/\(user.id)", "/admin/api/audit", "/admin/api/stats"] {
                let answer = try await server.call(.get, path, bearer: secret)
                #expect(answer.status == .ok, "\(path): \(answer.json)")
                #expect(answer.headers[Self.actingCredential] == "token nightly-report", "\(path)")
            }
            for (method, path) in [
                (HTTPRequest.Method.post, "/admin/api/users/\(user.id)/disable"),
                (.post, "/admin/api/users/\(user.id)/sessions/end"),
                (.delete, "/admin/api/users/\(user.id)"),
            ] {
                let refused = try await server.call(method, path, bearer: secret)
                #expect(refused.status == .forbidden, "\(method) \(path)")
                #expect(refused.json.string("error") == "insufficient_scope")
                #expect(refused.json.string("message") != nil)
            }
            #expect(try await server.store.user(id: user.id)?.status == .active, "a refused call changes nothing")
        }
    }

    @Test func aWriteTokenActsAndTheAuditLogNamesIt() async throws {
        try await ServerHarness.run { server in
            let user = try await Self.signIn(server, "write-target@example.com")
            let secret = try await Self.token(server, "ops-bot", .write)
            let disabled = try await server.call(.post, "/admin/api/users/\(user.id)/disable", bearer: secret)
            #expect(disabled.status == .ok, "\(disabled.json)")
            #expect(disabled.headers[Self.actingCredential] == "token ops-bot")
            #expect(try await server.store.user(id: user.id)?.status == .disabled)
            let events = try await server.store.auditEvents(
                AuditEventFilter(userID: user.id, types: [.accountDisabled]),
                limit: 10,
                after: nil
            ).items
            #expect(events.map(\.actor) == [.serviceToken("ops-bot")])
            let audit = try await server.call(.get, "/admin/api/audit?type=account_disabled", bearer: secret)
            let entry = try #require((audit.json["events"] as? [[String: Any]])?.first)
            #expect(entry.string("actor") == "service_token")
            #expect(entry.string("actorSubject") == "ops-bot")
            let enabled = try await server.call(.post, "/admin/api/users/\(user.id)/enable", bearer: secret)
            #expect(enabled.status == .ok, "\(enabled.json)")
        }
    }

    @Test func anAdminSessionIsNamedToo() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let answer = try await server.call(.get, "/admin/api/users", bearer: admin.token)
            #expect(answer.status == .ok)
            #expect(answer.headers[Self.actingCredential] == "admin \(admin.id)")
        }
    }

    @Test func aTokenMayNotActOnAnAdminsAccount() async throws {
        try await ServerHarness.run { server in
            let admin = try await Self.signIn(server, "protected-admin@example.com")
            try await server.store.grantAdmin(AdminSubject(admin.id), by: .operator, now: Date())
            let secret = try await Self.token(server, "ops-bot", .write)
            let refused = try await server.call(.post, "/admin/api/users/\(admin.id)/disable", bearer: secret)
            #expect(refused.status == .forbidden)
            #expect(refused.json.string("error") == "admin_protected")
        }
    }

    @Test func expiredRevokedAndUnknownTokensAreRefused() async throws {
        try await ServerHarness.run { server in
            let expiring = try await Self.token(server, "short-lived", .read, days: 1)
            let revoked = try await Self.token(server, "leaked", .write)
            #expect(try await server.call(.get, "/admin/api/users", bearer: expiring).status == .ok)
            #expect(try await server.call(.get, "/admin/api/users", bearer: revoked).status == .ok)

            let revocation = try await server.store.revokeAdminToken(named: "leaked", by: .operator, now: Date())
            #expect(revocation?.name == "leaked")
            let afterRevocation = try await server.call(.get, "/admin/api/users", bearer: revoked)
            #expect(afterRevocation.status == .unauthorized)
            #expect(afterRevocation.json.string("error") == "service_token_revoked")

            server.clock.advance(by: 86_400)
            let afterExpiry = try await server.call(.get, "/admin/api/users", bearer: expiring)
            #expect(afterExpiry.status == .unauthorized)
            #expect(afterExpiry.json.string("error") == "service_token_expired")

            let unknown = try await server.call(
                .get,
                "/admin/api/users",
                bearer: "siwa_at_" + String(repeating: "A", count: 43)
            )
            #expect(unknown.status == .unauthorized)
            #expect(unknown.json.string("error") == "invalid_token")
        }
    }

    @Test func aTokenIsRefusedOutsideTheAdminAPI() async throws {
        try await ServerHarness.run { server in
            let secret = try await Self.token(server, "ops-bot", .write)
            let me = try await server.call(.get, "/api/me", bearer: secret)
            #expect(me.status == .unauthorized)
            #expect(me.json.string("error") == "service_token_not_accepted")
            for path in ["/admin", "/admin/users", "/admin/audit"] {
                let page = try await server.call(.get, path, bearer: secret)
                #expect(page.status != .ok, "the console's page \(path) answered a service token")
            }
        }
    }

    @Test func useIsNoted() async throws {
        try await ServerHarness.run { server in
            let secret = try await Self.token(server, "ops-bot", .read)
            #expect(try await server.store.adminTokens().first?.lastUsedAt == nil)
            #expect(try await server.call(.get, "/admin/api/stats", bearer: secret).status == .ok)
            let used = try #require(try await server.store.adminTokens().first?.lastUsedAt)
            #expect(abs(used.timeIntervalSince(server.clock.now)) < 1)
        }
    }

    @Test func theAccessLogNamesTheTokenNeverItsSecret() async throws {
        let capture = LogRedactionTests.Capture()
        try await ServerHarness.run(logger: capture.logger(level: .info)) { server in
            let secret = try await Self.token(server, "nightly-report", .read)
            let answer = try await server.call(.get, "/admin/api/stats", bearer: secret)
            #expect(answer.status == .ok)
            let refused = try await server.call(.get, "/admin/api/stats", bearer: "siwa_at_unknown")
            #expect(refused.status == .unauthorized)
            let lines = capture.lines.withLock { $0 }
            let access = try lines.compactMap { line in
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            }.filter { $0["message"] == "request" && $0["route"] == "/admin/api/stats" }
            #expect(access.count == 2, "\(lines)")
            #expect(access.first?["service_token"] == "nightly-report", "\(access)")
            #expect(access.first?["user"] == nil)
            #expect(access.last?["service_token"] == nil, "a refused token names nothing")
            #expect(!lines.contains { $0.contains(secret) || $0.contains("siwa_at_") })
        }
    }

    @Test func theAdminNetworksApplyToTokens() async throws {
        try await ServerHarness.run(configuration: AdminNetworkTests.configuration()) { server in
            let secret = try await Self.token(server, "ops-bot", .read)
            let inside = try await AdminNetworkTests.get(
                "/admin/api/users",
                server,
                token: secret,
                from: "127.0.0.2",
                forwardedFor: "10.1.2.3"
            )
            #expect(inside.status == 200, "\(inside.body)")
            let outside = try await AdminNetworkTests.get(
                "/admin/api/users",
                server,
                token: secret,
                from: "127.0.0.2",
                forwardedFor: "192.0.2.7"
            )
            #expect(outside.status == 403)
            #expect(outside.body.contains("admin_network_refused"))
        }
    }
}
