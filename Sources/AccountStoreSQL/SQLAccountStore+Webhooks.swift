public import AccountStore
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The rows of webhook deliveries: `webhook_endpoints` (each endpoint's cursor into the lifecycle events and its
/// failing state), `webhook_deliveries` (one per event and endpoint, naming the event by sequence) and
/// `webhook_attempts`.
enum SQLWebhooks {
    /// A delivery's columns, with its event's (`d` and `e` in the queries).
    static let columns = """
        d.id AS delivery_id, d.endpoint, d.state, d.attempts, d.created_at, d.next_attempt_at, d.last_attempt_at,
        d.last_status, d.last_error, d.delivered_at, e.sequence, e.id, e.type, e.user_id, e.occurred_at, e.data
        """

    static func queue(
        endpoint: String,
        types: [String],
        channel: String?,
        limit: Int64,
        now: Int64,
        flavor: SQLFlavor,
        in database: any SQLDatabase
    ) async throws -> (queued: Int, more: Bool) {
        // On PostgreSQL the endpoint's row is locked while its events are queued: two instances take turns.
        let lock: SQLQueryString = flavor == .postgres ? " FOR UPDATE" : ""
        let row = try await database.raw(
            "SELECT after_sequence FROM webhook_endpoints WHERE name = \(bind: endpoint)\(lock)"
        ).first()
        guard let row else {
            try await database.raw(
                """
                INSERT INTO webhook_endpoints (name, after_sequence, created_at)
                SELECT \(bind: endpoint), last, \(bind: now) FROM lifecycle_event_sequence WHERE id = 1
                ON CONFLICT (name) DO NOTHING
                """
            ).run()
            return (0, false)
        }
        let after = try row.decode(column: "after_sequence", as: Int64.self)
        // The payload is read only to match a channel (a relying party's back-channel logout).
        let columns: SQLQueryString = channel == nil ? "sequence, type, user_id" : "sequence, type, user_id, data"
        let events = try await database.raw(
            """
            SELECT \(columns) FROM lifecycle_events WHERE sequence > \(bind: after)
            ORDER BY sequence LIMIT \(bind: limit)
            """
        ).all()
        var queued = 0
        var last = after
        for event in events {
            last = try event.decode(column: "sequence", as: Int64.self)
            guard types.contains(try event.decode(column: "type", as: String.self)) else { continue }
            if let channel,
                try SQLLifecycleEvents.channel(ofData: event.decode(column: "data", as: String.self)) != channel
            {
                continue
            }
            queued += try await database.raw(
                """
                INSERT INTO webhook_deliveries (
                    id, endpoint, event_sequence, user_id, state, attempts, created_at, next_attempt_at
                ) VALUES (
                    \(bind: AuditEvent.newID().lowercasedText), \(bind: endpoint), \(bind: last),
                    \(bind: try event.decode(column: "user_id", as: String.self)), 'pending', 0, \(bind: now),
                    \(bind: now)
                )
                ON CONFLICT (endpoint, event_sequence) DO NOTHING
                RETURNING 1
                """
            ).all().count
        }
        if last > after {
            try await database.raw(
                "UPDATE webhook_endpoints SET after_sequence = \(bind: last) WHERE name = \(bind: endpoint)"
            ).run()
        }
        return (queued, Int64(events.count) == limit)
    }

    static func claim(
        endpoint: String,
        limit: Int64,
        now: Int64,
        until: Int64,
        flavor: SQLFlavor,
        in database: any SQLDatabase
    ) async throws -> [WebhookDelivery] {
        // SQLite has one writer at a time; PostgreSQL's concurrent claims skip the rows another one has locked, and
        // the claim's end keeps them from being claimed again once it commits.
        let skipLocked: SQLQueryString = flavor == .postgres ? "FOR UPDATE OF d SKIP LOCKED" : ""
        let ids = try await database.raw(
            """
            UPDATE webhook_deliveries SET claimed_until = \(bind: until)
            WHERE id IN (
                SELECT d.id FROM webhook_deliveries d
                WHERE d.endpoint = \(bind: endpoint) AND d.state = 'pending' AND d.next_attempt_at <= \(bind: now)
                    AND (d.claimed_until IS NULL OR d.claimed_until <= \(bind: now))
                    AND NOT EXISTS (
                        SELECT 1 FROM webhook_deliveries p
                        WHERE p.endpoint = d.endpoint AND p.user_id = d.user_id AND p.state = 'pending'
                            AND p.event_sequence < d.event_sequence
                    )
                ORDER BY d.event_sequence LIMIT \(bind: limit)
                \(skipLocked)
            )
            RETURNING id
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
        guard !ids.isEmpty else { return [] }
        return try await database.raw(
            """
            SELECT \(unsafeRaw: columns) FROM webhook_deliveries d
            JOIN lifecycle_events e ON e.sequence = d.event_sequence
            WHERE d.id IN (\(binds: ids)) ORDER BY d.event_sequence
            """
        ).all().compactMap(delivery)
    }

    static func record(
        _ id: String,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext,
        time: Int64,
        in database: any SQLDatabase
    ) async throws -> Bool {
        let state: WebhookDeliveryState
        var nextAttempt: Int64?
        switch next {
        case .delivered: state = .delivered
        case .retry(let date):
            state = .pending
            nextAttempt = try SQLValue.milliseconds(date)
        case .giveUp: state = .failed
        }
        let delivered: Int64? = next == .delivered ? time : nil
        let row = try await database.raw(
            """
            UPDATE webhook_deliveries SET
                state = \(bind: state.rawValue), attempts = attempts + 1, next_attempt_at = \(bind: nextAttempt),
                claimed_until = NULL, last_attempt_at = \(bind: time), last_status = \(bind: attempt.status),
                last_error = \(bind: attempt.error), delivered_at = COALESCE(\(bind: delivered), delivered_at)
            WHERE id = \(bind: id)
            RETURNING endpoint, attempts
            """
        ).first()
        guard let row else { return false }
        let endpoint = try row.decode(column: "endpoint", as: String.self)
        try await database.raw(
            """
            INSERT INTO webhook_attempts (delivery_id, number, attempted_at, status, error, duration_ms)
            VALUES (
                \(bind: id), \(bind: try row.decode(column: "attempts", as: Int64.self)), \(bind: time),
                \(bind: attempt.status), \(bind: attempt.error), \(bind: attempt.milliseconds)
            )
            """
        ).run()
        if next == .delivered {
            try await database.raw("UPDATE webhook_endpoints SET failing_since = NULL WHERE name = \(bind: endpoint)")
                .run()
        } else {
            try await database.raw(
                """
                UPDATE webhook_endpoints SET failing_since = \(bind: time)
                WHERE name = \(bind: endpoint) AND failing_since IS NULL
                """
            ).run()
        }
        return true
    }

    /// The delivery of a row of ``columns``; `nil` for an event of a type this siwa does not know.
    static func delivery(_ row: any SQLRow) throws -> WebhookDelivery? {
        guard let event = try SQLLifecycleEvents.event(row) else { return nil }
        guard let id = UUID(text: try row.decode(column: "delivery_id", as: String.self)),
            let state = WebhookDeliveryState(rawValue: try row.decode(column: "state", as: String.self))
        else { throw StoreError(.corrupt, "a stored webhook delivery has no valid id or state") }
        func date(_ column: String) throws -> Date? {
            try row.decode(column: column, as: Int64?.self).map(SQLValue.date(milliseconds:))
        }
        return WebhookDelivery(
            id: id,
            endpoint: try row.decode(column: "endpoint", as: String.self),
            event: event,
            state: state,
            attempts: Int(try row.decode(column: "attempts", as: Int64.self)),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            nextAttemptAt: state == .pending ? try date("next_attempt_at") : nil,
            lastAttemptAt: try date("last_attempt_at"),
            lastStatus: try row.decode(column: "last_status", as: Int64?.self).map { Int($0) },
            lastError: try row.decode(column: "last_error", as: String?.self),
            deliveredAt: try date("delivered_at")
        )
    }
}

extension SQLAccountStore {
    public func queueWebhookDeliveries(
        endpoint: String,
        types: Set<LifecycleEventType>,
        channel: SignInChannel?,
        limit: Int,
        now: Date
    ) async throws(StoreError) -> (queued: Int, more: Bool) {
        guard limit > 0 else { return (0, false) }
        let now = try SQLValue.milliseconds(now)
        let types = types.map(\.rawValue)
        let channel = channel?.rawValue
        let limit = Int64(limit)
        let flavor = connections.flavor
        return try await write("queue webhook deliveries") { database in
            try await SQLWebhooks.queue(
                endpoint: endpoint,
                types: types,
                channel: channel,
                limit: limit,
                now: now,
                flavor: flavor,
                in: database
            )
        }
    }

    public func claimWebhookDeliveries(
        endpoint: String,
        limit: Int,
        now: Date,
        until: Date
    ) async throws(StoreError) -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        let now = try SQLValue.milliseconds(now)
        let until = try SQLValue.milliseconds(until)
        let limit = Int64(limit)
        let flavor = connections.flavor
        return try await write("claim webhook deliveries") { database in
            try await SQLWebhooks.claim(
                endpoint: endpoint,
                limit: limit,
                now: now,
                until: until,
                flavor: flavor,
                in: database
            )
        }
    }

    public func recordWebhookAttempt(
        _ id: UUID,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext
    ) async throws(StoreError) -> Bool {
        let time = try SQLValue.milliseconds(attempt.time)
        if case .retry(let date) = next { _ = try SQLValue.milliseconds(date) }
        let id = id.lowercasedText
        return try await write("record a webhook attempt") { database in
            try await SQLWebhooks.record(id, attempt, next: next, time: time, in: database)
        }
    }

    public func webhookDeliveries(
        endpoint: String,
        state: WebhookDeliveryState?,
        before: Int64?,
        limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        guard limit > 0 else { return [] }
        let before = before ?? .max
        let limit = Int64(limit)
        let stateCondition: SQLQueryString = state.map { "AND d.state = \(bind: $0.rawValue)" } ?? ""
        return try await read("list webhook deliveries") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLWebhooks.columns) FROM webhook_deliveries d
                JOIN lifecycle_events e ON e.sequence = d.event_sequence
                WHERE d.endpoint = \(bind: endpoint) AND d.event_sequence < \(bind: before) \(stateCondition)
                ORDER BY d.event_sequence DESC LIMIT \(bind: limit)
                """
            ).all().compactMap(SQLWebhooks.delivery)
        }
    }

    public func webhookDelivery(
        _ id: UUID
    ) async throws(StoreError) -> (delivery: WebhookDelivery, attempts: [WebhookAttempt])? {
        let id = id.lowercasedText
        return try await read("read a webhook delivery") { database in
            let row = try await database.raw(
                """
                SELECT \(unsafeRaw: SQLWebhooks.columns) FROM webhook_deliveries d
                JOIN lifecycle_events e ON e.sequence = d.event_sequence
                WHERE d.id = \(bind: id)
                """
            ).first()
            guard let row, let delivery = try SQLWebhooks.delivery(row) else { return nil }
            let attempts = try await database.raw(
                """
                SELECT attempted_at, status, error, duration_ms FROM webhook_attempts
                WHERE delivery_id = \(bind: id) ORDER BY number
                """
            ).all().map { row in
                WebhookAttempt(
                    time: SQLValue.date(milliseconds: try row.decode(column: "attempted_at", as: Int64.self)),
                    status: try row.decode(column: "status", as: Int64?.self).map { Int($0) },
                    error: try row.decode(column: "error", as: String?.self),
                    milliseconds: try row.decode(column: "duration_ms", as: Int64.self)
                )
            }
            return (delivery, attempts)
        }
    }

    public func redeliverWebhook(_ id: UUID, now: Date) async throws(StoreError) -> Bool {
        let now = try SQLValue.milliseconds(now)
        let id = id.lowercasedText
        return try await write("redeliver a webhook") { database in
            try await !database.raw(
                """
                UPDATE webhook_deliveries SET
                    state = 'pending', next_attempt_at = \(bind: now), claimed_until = NULL, delivered_at = NULL
                WHERE id = \(bind: id)
                RETURNING 1
                """
            ).all().isEmpty
        }
    }

    public func webhookEndpoints() async throws(StoreError) -> [WebhookEndpointState] {
        try await read("list webhook endpoints") { database in
            try await database.raw(
                """
                SELECT w.name, w.after_sequence, w.created_at, w.failing_since, w.disabled_at,
                    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.state = 'pending')
                        AS pending,
                    (SELECT min(e.occurred_at) FROM webhook_deliveries d
                        JOIN lifecycle_events e ON e.sequence = d.event_sequence
                        WHERE d.endpoint = w.name AND d.state = 'pending') AS oldest
                FROM webhook_endpoints w ORDER BY w.name
                """
            ).all().map { row in
                WebhookEndpointState(
                    name: try row.decode(column: "name", as: String.self),
                    afterSequence: try row.decode(column: "after_sequence", as: Int64.self),
                    createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
                    failingSince: try row.decode(column: "failing_since", as: Int64?.self)
                        .map(SQLValue.date(milliseconds:)),
                    disabledAt: try row.decode(column: "disabled_at", as: Int64?.self).map(
                        SQLValue.date(milliseconds:)
                    ),
                    pending: Int(try row.decode(column: "pending", as: Int64.self)),
                    oldestPendingEventAt: try row.decode(column: "oldest", as: Int64?.self)
                        .map(SQLValue.date(milliseconds:))
                )
            }
        }
    }

    public func setWebhookEndpoint(_ name: String, disabled: Bool, now: Date) async throws(StoreError) -> Bool {
        let disabledAt: Int64? = disabled ? try SQLValue.milliseconds(now) : nil
        return try await write("disable or enable a webhook endpoint") { database in
            let clearFailing: SQLQueryString = disabled ? "" : ", failing_since = NULL"
            return try await !database.raw(
                """
                UPDATE webhook_endpoints SET disabled_at = \(bind: disabledAt)\(clearFailing)
                WHERE name = \(bind: name) AND disabled_at IS \(unsafeRaw: disabled ? "NULL" : "NOT NULL") RETURNING 1
                """
            ).all().isEmpty
        }
    }
}
