import AccountStore
import AppleSignIn
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The admin API's view of the webhooks (`docs/events.md`): each configured endpoint and its state, its deliveries
/// with their attempts, a redelivery and the enabling of a disabled endpoint.
extension AdminAPIController {
    func addWebhookRoutes(to api: PolicedRoutes) {
        api.get("/webhooks", access: Self.reading, use: webhooks)
        api.get("/webhooks/:name/deliveries", access: Self.reading, use: webhookDeliveries)
        api.post("/webhooks/:name/enable", access: Self.acting, use: enableWebhook)
        api.get("/webhook-deliveries/:id", access: Self.reading, use: webhookDelivery)
        api.post("/webhook-deliveries/:id/redeliver", access: Self.acting, use: redeliverWebhook)
    }

    /// One configured endpoint: never its secrets, its URL without the query.
    struct WebhookEndpointSummary: ResponseCodable, Equatable {
        var name: String
        var url: String
        var events: [String]
        var pending: Int
        /// Seconds since the oldest undelivered event happened; 0 with none pending.
        var lagSeconds: Int
        var failingSince: Date?
        var disabledAt: Date?
    }

    struct WebhookEndpointList: ResponseCodable {
        var endpoints: [WebhookEndpointSummary]
    }

    /// One delivery: its event by id, type and sequence (the feed has its payload), and how its attempts went.
    struct WebhookDeliverySummary: ResponseCodable, Equatable {
        var id: String
        var endpoint: String
        var eventId: String
        var eventType: String
        var sequence: Int64
        var state: String
        var attempts: Int
        var createdAt: Date
        var nextAttemptAt: Date?
        var lastAttemptAt: Date?
        var lastStatus: Int?
        var lastError: String?
        var deliveredAt: Date?

        init(_ delivery: WebhookDelivery) {
            id = delivery.id.lowercasedText
            endpoint = delivery.endpoint
            eventId = delivery.event.id.lowercasedText
            eventType = delivery.event.type.rawValue
            sequence = delivery.event.sequence
            state = delivery.state.rawValue
            attempts = delivery.attempts
            createdAt = delivery.createdAt
            nextAttemptAt = delivery.nextAttemptAt
            lastAttemptAt = delivery.lastAttemptAt
            lastStatus = delivery.lastStatus
            lastError = delivery.lastError
            deliveredAt = delivery.deliveredAt
        }
    }

    struct WebhookDeliveryPage: ResponseCodable {
        var deliveries: [WebhookDeliverySummary]
        /// Pass as `before` for the next (older) page; absent on the last.
        var next: String?
    }

    struct WebhookAttemptSummary: ResponseCodable, Equatable {
        var time: Date
        var status: Int?
        var error: String?
        var milliseconds: Int64
    }

    struct WebhookDeliveryDetail: ResponseCodable {
        var delivery: WebhookDeliverySummary
        /// Oldest first.
        var attempts: [WebhookAttemptSummary]
    }

    @Sendable func webhooks(_ request: Request, context: SiwaRequestContext) async throws -> WebhookEndpointList {
        _ = try await access.caller(context)
        let states = try await store.webhookEndpoints()
        return WebhookEndpointList(
            endpoints: configuration.deliveryEndpoints.map { endpoint in
                summary(endpoint, states.first { $0.name == endpoint.name })
            }
        )
    }

    @Sendable func webhookDeliveries(
        _ request: Request,
        context: SiwaRequestContext
    ) async throws -> WebhookDeliveryPage {
        _ = try await access.caller(context)
        let endpoint = try configuredEndpoint(context)
        let limit = try RequestFields.limit(request)
        let state = try request.uri.queryParameters["state"].map(String.init).flatMap { text -> WebhookDeliveryState? in
            guard !text.isEmpty else { return nil }
            guard let state = WebhookDeliveryState(rawValue: text) else {
                throw RequestFields.invalid("state", "is none of pending, delivered and failed")
            }
            return state
        }
        let before = try RequestFields.integer(
            request.uri.queryParameters["before"].map(String.init),
            "before",
            0...Int.max
        ).map(Int64.init)
        let deliveries = try await store.webhookDeliveries(
            endpoint: endpoint.name,
            state: state,
            before: before,
            limit: limit
        )
        return WebhookDeliveryPage(
            deliveries: deliveries.map(WebhookDeliverySummary.init),
            next: deliveries.count == limit ? deliveries.last.map { String($0.event.sequence) } : nil
        )
    }

    @Sendable func webhookDelivery(
        _ request: Request,
        context: SiwaRequestContext
    ) async throws -> WebhookDeliveryDetail {
        _ = try await access.caller(context)
        guard let (delivery, attempts) = try await store.webhookDelivery(try deliveryID(context)) else {
            throw Self.noSuchDelivery
        }
        return WebhookDeliveryDetail(
            delivery: WebhookDeliverySummary(delivery),
            attempts: attempts.map {
                WebhookAttemptSummary(time: $0.time, status: $0.status, error: $0.error, milliseconds: $0.milliseconds)
            }
        )
    }

    /// Makes the delivery due at once (recorded as `webhook_redelivered` by the caller); it goes out in its account's
    /// order.
    @Sendable func redeliverWebhook(
        _ request: Request,
        context: SiwaRequestContext
    ) async throws -> WebhookDeliverySummary {
        let caller = try await access.caller(context)
        let id = try deliveryID(context)
        guard try await store.redeliverWebhook(id, now: clock.now),
            let (delivery, _) = try await store.webhookDelivery(id)
        else { throw Self.noSuchDelivery }
        await actions.audit.append(
            .webhookRedelivered,
            actor: caller.actor,
            details: [
                "delivery": delivery.id.lowercasedText, "endpoint": delivery.endpoint,
                "event": delivery.event.id.lowercasedText,
            ]
        )
        return WebhookDeliverySummary(delivery)
    }

    /// Enables an endpoint siwa disabled for failing too long, recording who did.
    @Sendable func enableWebhook(_ request: Request, context: SiwaRequestContext) async throws -> WebhookEndpointSummary
    {
        let caller = try await access.caller(context)
        let endpoint = try configuredEndpoint(context)
        if try await store.setWebhookEndpoint(endpoint.name, disabled: false, now: clock.now) {
            await actions.audit.append(
                .webhookEndpointEnabled,
                actor: caller.actor,
                details: ["endpoint": endpoint.name]
            )
        }
        let states = try await store.webhookEndpoints()
        return summary(endpoint, states.first { $0.name == endpoint.name })
    }

    private func summary(_ endpoint: WebhookEndpoint, _ state: WebhookEndpointState?) -> WebhookEndpointSummary {
        WebhookEndpointSummary(
            name: endpoint.name,
            url: endpoint.shownURL,
            events: endpoint.events.map(\.rawValue).sorted(),
            pending: state?.pending ?? 0,
            lagSeconds: state?.oldestPendingEventAt.map { max(0, Int(clock.now.timeIntervalSince($0))) } ?? 0,
            failingSince: state?.failingSince,
            disabledAt: state?.disabledAt
        )
    }

    private func configuredEndpoint(_ context: SiwaRequestContext) throws -> WebhookEndpoint {
        let name = context.parameters.get("name") ?? ""
        guard let endpoint = configuration.deliveryEndpoints.first(where: { $0.name == name }) else {
            throw AuthServerError(
                .notFound,
                AuthServerError.Code.notFound,
                "no webhook endpoint of that name is configured (SIWA_WEBHOOKS_ENDPOINTS)"
            )
        }
        return endpoint
    }

    private func deliveryID(_ context: SiwaRequestContext) throws -> UUID {
        guard let id = UUID(uuidString: context.parameters.get("id") ?? "") else {
            throw RequestFields.invalid("id", "is not a webhook delivery id")
        }
        return id
    }

    static let noSuchDelivery = AuthServerError(
        .notFound,
        AuthServerError.Code.notFound,
        "there is no webhook delivery with that id"
    )
}
