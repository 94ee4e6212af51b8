import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// The events feed (`GET /admin/api/events`): what a backend that pulls reads, through the server, from changes made
/// by a user, an admin and the store's own detection.
@Suite("Events feed")
struct EventsFeedTests {
    private static func token(_ server: ServerHarness, _ scope: AdminTokenScope) async throws -> String {
        try await ServiceTokens.create(
            name: "backend-\(scope.rawValue)",
            scope: scope,
            lifetimeDays: 30,
            by: .operator,
            in: server.store,
            now: server.clock.now
        ).secret
    }

    private static func events(_ page: [String: Any]) -> [[String: Any]] { page["events"] as? [[String: Any]] ?? [] }

    @Test func aBackendReadsEveryChangeInCommitOrderWithStableIDs() async throws {
        try await ServerHarness.run { server in
            let reader = try await Self.token(server, .read)
            let writer = try await Self.token(server, .write)
            let signedIn = try await server.signIn("feed@example.com")
            let accessToken = try #require(signedIn.json.string("accessToken"))
            let userID = try #require(signedIn.json.user.string("id"))
            #expect(try await server.signIn("feed@example.com").status == .ok, "a returning sign-in")
            #expect(try await server.call(.post, "/auth/logout", bearer: accessToken).status.code < 300)
            #expect(try await server.call(.post, "/admin/api/users/\(userID)/disable", bearer: writer).status == .ok)
            #expect(try await server.call(.post, "/admin/api/users/\(userID)/enable", bearer: writer).status == .ok)
            #expect(try await server.call(.delete, "/admin/api/users/\(userID)", bearer: writer).status == .ok)

            let all = try await server.call(.get, "/admin/api/events", bearer: reader)
            #expect(all.status == .ok, "\(all.json)")
            let events = Self.events(all.json)
            let types = events.compactMap { $0["type"] as? String }
            #expect(types.first == "user.created")
            #expect(types.last == "user.deleted")
            #expect(
                types.filter { $0 == "session.ended" }.count == 2,
                "the logout's, and the second sign-in's session ended by the disabling"
            )
            #expect(types.contains("user.disabled") && types.contains("user.enabled"))
            #expect(events.allSatisfy { ($0["data"] as? [String: Any])?["user_id"] as? String == userID })
            let sequences = events.compactMap { $0["sequence"] as? Int }
            #expect(sequences == Array(1...events.count))
            #expect(all.json.string("next") == String(events.count))
            #expect(all.json["hasMore"] as? Bool == false)
            let logout = try #require(events.first { ($0["data"] as? [String: Any])?["reason"] as? String == "logout" })
            #expect((logout["data"] as? [String: Any])?["by"] as? String == "user")
            let deleted = try #require(events.last?["data"] as? [String: Any])
            #expect(deleted["by"] as? String == "service_token")
            #expect((events.first?["data"] as? [String: Any])?["email"] is NSNull, "the deletion blanked the email")

            // Paged from a cursor, the same events with the same ids.
            let first = try await server.call(.get, "/admin/api/events?limit=2", bearer: reader)
            #expect(first.json["hasMore"] as? Bool == true)
            let next = try #require(first.json.string("next"))
            let rest = try await server.call(.get, "/admin/api/events?after=\(next)&limit=200", bearer: reader)
            let paged = (Self.events(first.json) + Self.events(rest.json)).compactMap { $0["id"] as? String }
            #expect(paged == events.compactMap { $0["id"] as? String })
            let caughtUp = try await server.call(.get, "/admin/api/events?after=\(events.count)", bearer: reader)
            #expect(Self.events(caughtUp.json).isEmpty)
            #expect(caughtUp.json.string("next") == String(events.count), "a reader that caught up keeps its cursor")
        }
    }

    @Test func aCursorThatIsNotASequenceIsRefusedAndTheFeedNeedsAnAdminCredential() async throws {
        try await ServerHarness.run { server in
            let reader = try await Self.token(server, .read)
            for after in ["-1", "abc", "1.5", "99999999999999999999999"] {
                let refused = try await server.call(.get, "/admin/api/events?after=\(after)", bearer: reader)
                #expect(refused.status == .badRequest, "after=\(after)")
                #expect(refused.json.string("error") == "invalid_field")
                #expect(refused.json.string("message")?.contains("after") == true)
            }
            #expect(try await server.call(.get, "/admin/api/events?limit=0", bearer: reader).status == .badRequest)
            #expect(try await server.call(.get, "/admin/api/events").status == .unauthorized)
            let user = try #require(try await server.signIn("not-admin@example.com").json.string("accessToken"))
            let forbidden = try await server.call(.get, "/admin/api/events", bearer: user)
            #expect(forbidden.status == .forbidden)
            #expect(forbidden.json.string("error") == "admin_required")
        }
    }
}
