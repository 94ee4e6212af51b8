import AccountStore
import ArgumentParser
import AuthServer
import Foundation

/// `siwa webhooks`: the configured endpoints and where their deliveries stand; enabling a disabled endpoint and
/// redelivering one delivery.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "The webhook endpoints of the app's backend: list them, enable a disabled one, redeliver.",
        discussion: """
            Endpoints come from SIWA_WEBHOOKS_ENDPOINTS (docs/events.md); the database keeps their deliveries.

            Examples:
              siwa webhooks list
              siwa webhooks enable backend
              siwa webhooks redeliver 019a1f0e-…
            """,
        subcommands: [List.self, Enable.self, Redeliver.self],
        defaultSubcommand: List.self
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List the configured endpoints: URL (without its query), events, pending deliveries, lag, failing "
                + "since, disabled; and the last deliveries of each with --deliveries.",
            discussion: "Never prints a secret.\n\nExample:\n  siwa webhooks list --deliveries 5 --json"
        )

        @Option(help: "Also list each endpoint's latest deliveries, at most this many.")
        var deliveries = 0

        @Flag(help: "One JSON object instead of text.")
        var json = false

        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await withConfiguredStore(self.store) { settings, store in
                let configured = settings.server.deliveryEndpoints
                let states = try await store.webhookEndpoints()
                let now = Date()
                var listed: [[String: Any]] = []
                for endpoint in configured {
                    let state = states.first { $0.name == endpoint.name }
                    var entry: [String: Any] = [
                        "name": endpoint.name, "url": endpoint.shownURL,
                        "events": endpoint.events.map(\.rawValue).sorted(), "pending": state?.pending ?? 0,
                        "lagSeconds": state?.oldestPendingEventAt.map { Int(now.timeIntervalSince($0)) } ?? 0,
                        "seen": state != nil,
                    ]
                    entry["failingSince"] = state?.failingSince?.formatted(.iso8601)
                    entry["disabledAt"] = state?.disabledAt?.formatted(.iso8601)
                    if deliveries > 0 {
                        entry["deliveries"] = try await store.webhookDeliveries(
                            endpoint: endpoint.name,
                            state: nil,
                            before: nil,
                            limit: min(deliveries, 200)
                        ).map(Self.entry)
                    }
                    listed.append(entry)
                }
                if json {
                    let data = try JSONSerialization.data(
                        withJSONObject: ["endpoints": listed],
                        options: [.sortedKeys, .withoutEscapingSlashes]
                    )
                    print(String(decoding: data, as: UTF8.self))
                    return
                }
                if listed.isEmpty { print("no webhook endpoint is configured (SIWA_WEBHOOKS_ENDPOINTS)") }
                for entry in listed { Self.printText(entry) }
            }
        }

        static func entry(_ delivery: WebhookDelivery) -> [String: Any] {
            var entry: [String: Any] = [
                "id": delivery.id.uuidString.lowercased(), "eventId": delivery.event.id.uuidString.lowercased(),
                "type": delivery.event.type.rawValue, "sequence": delivery.event.sequence,
                "state": delivery.state.rawValue, "attempts": delivery.attempts,
            ]
            entry["nextAttemptAt"] = delivery.nextAttemptAt?.formatted(.iso8601)
            entry["lastStatus"] = delivery.lastStatus
            entry["lastError"] = delivery.lastError
            return entry
        }

        static func printText(_ entry: [String: Any]) {
            let state =
                (entry["disabledAt"] as? String).map { "DISABLED since \($0)" }
                ?? (entry["failingSince"] as? String).map { "failing since \($0)" } ?? "ok"
            print(
                "\(entry["name"] ?? "")  \(entry["url"] ?? "")  \(state)  pending \(entry["pending"] ?? 0)  "
                    + "lag \(entry["lagSeconds"] ?? 0) s  events \((entry["events"] as? [String] ?? []).joined(separator: ","))"
            )
            for delivery in entry["deliveries"] as? [[String: Any]] ?? [] {
                let last = (delivery["lastError"] as? String).map { "  last: \($0)" } ?? ""
                let next = (delivery["nextAttemptAt"] as? String).map { "  next \($0)" } ?? ""
                print(
                    "  \(delivery["id"] ?? "")  \(delivery["type"] ?? "")  \(delivery["state"] ?? "")  "
                        + "attempts \(delivery["attempts"] ?? 0)\(next)\(last)"
                )
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable an endpoint siwa disabled for failing too long (recorded in the audit log).",
            discussion:
                "Its waiting deliveries go out again in the next round, oldest first.\n\nExample:\n  siwa webhooks enable backend"
        )

        @Argument(help: "The endpoint's name.")
        var name: String

        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                guard try await store.webhookEndpoints().contains(where: { $0.name == name }) else {
                    Terminal.error("error: siwa has queued nothing for a webhook endpoint named '\(name)'")
                    throw ExitCode(1)
                }
                guard try await store.setWebhookEndpoint(name, disabled: false, now: Date()) else {
                    print("webhook endpoint '\(name)' is not disabled")
                    return
                }
                try await store.appendAuditEvent(
                    AuditEvent(
                        time: Date(),
                        type: .webhookEndpointEnabled,
                        actor: .operator,
                        details: ["endpoint": name]
                    )
                )
                print("enabled webhook endpoint '\(name)'")
            }
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Deliver one delivery again (delivered, given up or pending), at once and in its account's order "
                + "(recorded in the audit log as webhook_redelivered).",
            discussion:
                "`siwa webhooks list --deliveries 20` shows the ids.\n\nExample:\n  siwa webhooks redeliver 019a…"
        )

        @Argument(help: "The delivery's id.")
        var id: String

        @OptionGroup var store: StoreOptions

        func run() async throws {
            guard let delivery = UUID(uuidString: id) else {
                Terminal.error("error: '\(id.prefix(64))' is not a delivery id (a UUID)")
                throw ExitCode(2)
            }
            try await withConfiguredStore(self.store) { _, store in
                guard try await store.redeliverWebhook(delivery, now: Date()),
                    let (redelivered, _) = try await store.webhookDelivery(delivery)
                else {
                    Terminal.error("error: no webhook delivery has the id \(id)")
                    throw ExitCode(1)
                }
                try await store.appendAuditEvent(
                    AuditEvent(
                        time: Date(),
                        type: .webhookRedelivered,
                        actor: .operator,
                        details: [
                            "delivery": redelivered.id.uuidString.lowercased(), "endpoint": redelivered.endpoint,
                            "event": redelivered.event.id.uuidString.lowercased(),
                        ]
                    )
                )
                print("delivery \(id.lowercased()) is due again")
            }
        }
    }
}
