import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// The admin API's view of the webhooks: the endpoints without secrets or query, an endpoint's deliveries and one
/// delivery's attempts, a redelivery, and enabling a disabled endpoint, recorded; read tokens read, write tokens act.
@Suite("Webhooks in the admin API")
struct WebhookAdminAPITests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    private static func configuration() throws -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        // No transport: nothing is sent, so the test sets each delivery's state itself.
        configuration.webhooks.endpoints = [
            try WebhookEndpoint(
                name: "backend",
                url: "https://hooks.example.com/siwa?token=hidden",
                secrets: [secret],
                events: ["user.created", "user.deleted"]
            )
        ]
        return configuration
    }

    private static func token(_ server: ServerHarness, _ scope: AdminTokenScope) async throws -> String {
        try await ServiceTokens.create(
            name: "ops-\(scope.rawValue)",
            scope: scope,
            lifetimeDays: 30,
            by: .operator,
            in: server.store,
            now: server.clock.now
        ).secret
    }

    @Test func anOperatorSeesDeliveriesRedeliversAndEnables() async throws {
        let store = InMemoryAccountStore()
        try await ServerHarness.run(store: store, configuration: try Self.configuration()) { server in
            let reader = try await Self.token(server, .read)
            let writer = try await Self.token(server, .write)
            let all = Set(LifecycleEventType.allCases)
            _ = try await store.queueWebhookDeliveries(
                endpoint: "backend",
                types: all,
                channel: nil,
                limit: 10,
                now: server.clock.now
            )
            _ = try await server.signIn("one@example.com")
            _ = try await server.signIn("two@example.com")
            _ = try await store.queueWebhookDeliveries(
                endpoint: "backend",
                types: all,
                channel: nil,
                limit: 10,
                now: server.clock.now
            )
            let claimed = try await store.claimWebhookDeliveries(
                endpoint: "backend",
                limit: 10,
                now: server.clock.now,
                until: server.clock.now.addingTimeInterval(60)
            )
            #expect(claimed.count == 2)
            let failing = try #require(claimed.first)
            _ = try await store.recordWebhookAttempt(
                failing.id,
                WebhookAttempt(time: server.clock.now, status: 502, error: "answered 502", milliseconds: 31),
                next: .giveUp
            )
            _ = try await store.setWebhookEndpoint("backend", disabled: true, now: server.clock.now)

            let endpoints = try await server.call(.get, "/admin/api/webhooks", bearer: reader)
            #expect(endpoints.status == .ok, "\(endpoints.json)")
            let endpoint = try #require((endpoints.json["endpoints"] as? [[String: Any]])?.first)
            #expect(endpoint["name"] as? String == "backend")
            #expect(endpoint["url"] as? String == "https://hooks.example.com/siwa", "the query is left out")
            #expect(endpoint["events"] as? [String] == ["user.created", "user.deleted"])
            #expect(endpoint["pending"] as? Int == 1 && endpoint["disabledAt"] is String)
            let shown = "\(endpoints.json)"
            #expect(!shown.contains("hidden") && !shown.contains("whsec"))

            let failed = try await server.call(
                .get,
                "/admin/api/webhooks/backend/deliveries?state=failed",
                bearer: reader
            )
            let listed = try #require(failed.json["deliveries"] as? [[String: Any]])
            #expect(listed.map { $0["id"] as? String } == [failing.id.lowercasedText])
            #expect(
                listed.first?["lastStatus"] as? Int == 502 && listed.first?["eventType"] as? String == "user.created"
            )
            let page = try await server.call(.get, "/admin/api/webhooks/backend/deliveries?limit=1", bearer: reader)
            let next = try #require(page.json.string("next"))
            let older = try await server.call(
                .get,
                "/admin/api/webhooks/backend/deliveries?before=\(next)",
                bearer: reader
            )
            #expect((older.json["deliveries"] as? [[String: Any]])?.count == 1)
            #expect(older.json["next"] == nil)

            let detail = try await server.call(.get, "/admin/api/webhook-deliveries/\(failing.id)", bearer: reader)
            let attempts = try #require(detail.json["attempts"] as? [[String: Any]])
            #expect(attempts.count == 1 && attempts.first?["error"] as? String == "answered 502")
            #expect(attempts.first?["milliseconds"] as? Int == 31)

            let path = "/admin/api/webhook-deliveries/\(failing.id)/redeliver"
            #expect(try await server.call(.post, path, bearer: reader).status == .forbidden, "a read token reads")
            let redelivered = try await server.call(.post, path, bearer: writer)
            #expect(redelivered.status == .ok, "\(redelivered.json)")
            #expect(redelivered.json.string("state") == "pending")

            let enabled = try await server.call(.post, "/admin/api/webhooks/backend/enable", bearer: writer)
            #expect(enabled.status == .ok, "\(enabled.json)")
            #expect(enabled.json["disabledAt"] == nil)
            let recorded = try await store.auditEvents(
                AuditEventFilter(types: [.webhookEndpointEnabled]),
                limit: 5,
                after: nil
            ).items
            #expect(recorded.map(\.actor) == [.serviceToken("ops-write")])
            let again = try await server.call(.post, "/admin/api/webhooks/backend/enable", bearer: writer)
            #expect(again.status == .ok)
            let redeliveries = try await store.auditEvents(
                AuditEventFilter(types: [.webhookRedelivered, .webhookEndpointEnabled]),
                limit: 5,
                after: nil
            ).items
            #expect(
                redeliveries.map(\.type) == [.webhookEndpointEnabled, .webhookRedelivered],
                "enabling twice is one"
            )
            #expect(redeliveries.last?.details["delivery"] == failing.id.lowercasedText)
        }
    }

    @Test func unknownEndpointsDeliveriesAndFieldsAreRefusedSayingWhich() async throws {
        try await ServerHarness.run(configuration: try Self.configuration()) { server in
            let reader = try await Self.token(server, .read)
            let writer = try await Self.token(server, .write)
            let cases: [(HTTPRequest.Method, String, String?, HTTPResponse.Status, String)] = [
                (.get, "/admin/api/webhooks/nobody/deliveries", reader, .notFound, "no webhook endpoint"),
                (.get, "/admin/api/webhooks/backend/deliveries?state=lost", reader, .badRequest, "state"),
                (.get, "/admin/api/webhooks/backend/deliveries?before=-1", reader, .badRequest, "before"),
                (.get, "/admin/api/webhook-deliveries/not-a-uuid", reader, .badRequest, "id"),
                (.get, "/admin/api/webhook-deliveries/\(UUID())", reader, .notFound, "no webhook delivery"),
                (.post, "/admin/api/webhook-deliveries/\(UUID())/redeliver", writer, .notFound, "no webhook delivery"),
                (.post, "/admin/api/webhooks/nobody/enable", writer, .notFound, "no webhook endpoint"),
                (.get, "/admin/api/webhooks", nil, .unauthorized, "Authorization"),
            ]
            for (method, path, token, status, words) in cases {
                let answer = try await server.call(method, path, bearer: token)
                #expect(answer.status == status, "\(method) \(path): \(answer.json)")
                #expect(answer.json.string("message")?.contains(words) == true, "\(path): \(answer.json)")
            }
        }
    }
}
