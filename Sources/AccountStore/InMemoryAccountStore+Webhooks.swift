#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A webhook delivery as the in-memory store keeps it: its event by sequence (read from the log, so that a deleted
/// account's blanked values show), its claim and its attempts.
struct StoredWebhookDelivery: Sendable {
    var id: UUID
    var endpoint: String
    var sequence: Int64
    var userID: UserID
    var state: WebhookDeliveryState
    var createdAt: Date
    var nextAttemptAt: Date?
    var claimedUntil: Date?
    var attempts: [WebhookAttempt] = []
    var deliveredAt: Date?
}

extension InMemoryAccountStore {
    public func queueWebhookDeliveries(
        endpoint: String,
        types: Set<LifecycleEventType>,
        channel: SignInChannel?,
        limit: Int,
        now: Date
    ) throws(StoreError) -> (queued: Int, more: Bool) {
        try checkAvailable()
        guard var state = webhookEndpointsByName[endpoint] else {
            webhookEndpointsByName[endpoint] = WebhookEndpointState(
                name: endpoint,
                afterSequence: lastEventSequence,
                createdAt: now,
                failingSince: nil,
                disabledAt: nil,
                pending: 0,
                oldestPendingEventAt: nil
            )
            return (0, false)
        }
        let after = state.afterSequence
        let examined = Array(lifecycleLog.lazy.filter { $0.sequence > after }.prefix(max(0, limit)))
        var queued = 0
        for event in examined where types.contains(event.type) && (channel == nil || event.sessionChannel == channel) {
            webhookQueue.append(
                StoredWebhookDelivery(
                    id: AuditEvent.newID(),
                    endpoint: endpoint,
                    sequence: event.sequence,
                    userID: event.userID,
                    state: .pending,
                    createdAt: now,
                    nextAttemptAt: now
                )
            )
            queued += 1
        }
        if let last = examined.last { state.afterSequence = last.sequence }
        webhookEndpointsByName[endpoint] = state
        return (queued, lifecycleLog.last.map { $0.sequence > state.afterSequence } ?? false)
    }

    public func claimWebhookDeliveries(
        endpoint: String,
        limit: Int,
        now: Date,
        until: Date
    ) throws(StoreError) -> [WebhookDelivery] {
        try checkAvailable()
        var heldBack: Set<UserID> = []
        var claimed: [WebhookDelivery] = []
        let indices = webhookQueue.indices.filter {
            webhookQueue[$0].endpoint == endpoint && webhookQueue[$0].state == .pending
        }.sorted { webhookQueue[$0].sequence < webhookQueue[$1].sequence }
        for index in indices where claimed.count < limit {
            let stored = webhookQueue[index]
            // Only the earliest pending delivery of an account may go: it holds back the later ones.
            guard heldBack.insert(stored.userID).inserted else { continue }
            guard (stored.nextAttemptAt ?? .distantFuture) <= now, (stored.claimedUntil ?? .distantPast) <= now,
                let delivery = delivery(stored)
            else { continue }
            webhookQueue[index].claimedUntil = until
            claimed.append(delivery)
        }
        return claimed
    }

    public func recordWebhookAttempt(
        _ id: UUID,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext
    ) throws(StoreError) -> Bool {
        try checkAvailable()
        guard let index = webhookQueue.firstIndex(where: { $0.id == id }) else { return false }
        webhookQueue[index].attempts.append(attempt)
        webhookQueue[index].claimedUntil = nil
        switch next {
        case .delivered:
            webhookQueue[index].state = .delivered
            webhookQueue[index].nextAttemptAt = nil
            webhookQueue[index].deliveredAt = attempt.time
        case .retry(let date):
            webhookQueue[index].state = .pending
            webhookQueue[index].nextAttemptAt = date
        case .giveUp:
            webhookQueue[index].state = .failed
            webhookQueue[index].nextAttemptAt = nil
        }
        let endpoint = webhookQueue[index].endpoint
        if next == .delivered {
            webhookEndpointsByName[endpoint]?.failingSince = nil
        } else if webhookEndpointsByName[endpoint]?.failingSince == nil {
            webhookEndpointsByName[endpoint]?.failingSince = attempt.time
        }
        return true
    }

    public func webhookDeliveries(
        endpoint: String,
        state: WebhookDeliveryState?,
        before: Int64?,
        limit: Int
    ) throws(StoreError) -> [WebhookDelivery] {
        try checkAvailable()
        let before = before ?? .max
        return Array(
            webhookQueue.lazy
                .filter { $0.endpoint == endpoint && $0.sequence < before && (state == nil || $0.state == state) }
                .sorted { $0.sequence > $1.sequence }
                .compactMap(delivery)
                .prefix(max(0, limit))
        )
    }

    public func webhookDelivery(
        _ id: UUID
    ) throws(StoreError) -> (delivery: WebhookDelivery, attempts: [WebhookAttempt])? {
        try checkAvailable()
        guard let stored = webhookQueue.first(where: { $0.id == id }), let delivery = delivery(stored) else {
            return nil
        }
        return (delivery, stored.attempts)
    }

    public func redeliverWebhook(_ id: UUID, now: Date) throws(StoreError) -> Bool {
        try checkAvailable()
        guard let index = webhookQueue.firstIndex(where: { $0.id == id }) else { return false }
        webhookQueue[index].state = .pending
        webhookQueue[index].nextAttemptAt = now
        webhookQueue[index].claimedUntil = nil
        webhookQueue[index].deliveredAt = nil
        return true
    }

    public func webhookEndpoints() throws(StoreError) -> [WebhookEndpointState] {
        try checkAvailable()
        let times = Dictionary(lifecycleLog.map { ($0.sequence, $0.time) }, uniquingKeysWith: { first, _ in first })
        return webhookEndpointsByName.values.sorted { $0.name < $1.name }.map { endpoint in
            var endpoint = endpoint
            let pending = webhookQueue.filter { $0.endpoint == endpoint.name && $0.state == .pending }
            endpoint.pending = pending.count
            endpoint.oldestPendingEventAt = pending.compactMap { times[$0.sequence] }.min()
            return endpoint
        }
    }

    public func setWebhookEndpoint(_ name: String, disabled: Bool, now: Date) throws(StoreError) -> Bool {
        try checkAvailable()
        guard let endpoint = webhookEndpointsByName[name], (endpoint.disabledAt != nil) != disabled else {
            return false
        }
        webhookEndpointsByName[name]?.disabledAt = disabled ? now : nil
        if !disabled { webhookEndpointsByName[name]?.failingSince = nil }
        return true
    }

    /// The record of a stored delivery, with its event as the log holds it now; `nil` when the event is gone.
    private func delivery(_ stored: StoredWebhookDelivery) -> WebhookDelivery? {
        guard let event = lifecycleLog.first(where: { $0.sequence == stored.sequence }) else { return nil }
        let last = stored.attempts.last
        return WebhookDelivery(
            id: stored.id,
            endpoint: stored.endpoint,
            event: event,
            state: stored.state,
            attempts: stored.attempts.count,
            createdAt: stored.createdAt,
            nextAttemptAt: stored.state == .pending ? stored.nextAttemptAt : nil,
            lastAttemptAt: last?.time,
            lastStatus: last?.status,
            lastError: last?.error,
            deliveredAt: stored.deliveredAt
        )
    }
}
