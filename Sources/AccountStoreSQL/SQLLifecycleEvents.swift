public import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The lifecycle events' rows (`lifecycle_events`, the outbox): how a ``LifecycleEvent`` is written in the
/// transaction of its change and read back.
///
/// Sequences come from the one row of `lifecycle_event_sequence`, incremented in the writing transaction: on
/// PostgreSQL the row stays locked until that transaction commits, so sequences are handed out in commit order and a
/// reader paging by sequence never passes an event that commits later with a smaller one (a `BIGSERIAL` would:
/// sequences are taken when a row is inserted, not when it commits). Every transaction appends its events last, after
/// its other rows are locked, so that the lock is held for the commit only and two writers cannot deadlock on it.
enum SQLLifecycleEvents {
    static let columns = "sequence, id, type, user_id, occurred_at, data"

    /// Appends `events`, in order, to the outbox inside the caller's transaction.
    static func append(_ events: [LifecycleEvent], to database: any SQLDatabase) async throws {
        guard !events.isEmpty else { return }
        let count = Int64(events.count)
        let last = try await database.raw(
            "UPDATE lifecycle_event_sequence SET last = last + \(bind: count) WHERE id = 1 RETURNING last"
        ).first()?.decode(column: "last", as: Int64.self)
        guard let last else { throw StoreError(.corrupt, "the lifecycle event sequence row is missing") }
        var sequence = last - count
        for event in events {
            sequence += 1
            let id = event.id.lowercasedText
            let time = try SQLValue.milliseconds(event.time)
            try await database.raw(
                """
                INSERT INTO lifecycle_events (\(unsafeRaw: columns)) VALUES (
                    \(bind: sequence), \(bind: id), \(bind: event.type.rawValue), \(bind: event.userID.description),
                    \(bind: time), \(bind: try json(event.data))
                )
                """
            ).run()
        }
    }

    /// Blanks the personal values of the account's events (its deletion), inside the caller's transaction.
    static func forgetPerson(userID: String, in database: any SQLDatabase) async throws {
        let rows = try await database.raw(
            "SELECT \(unsafeRaw: columns) FROM lifecycle_events WHERE user_id = \(bind: userID) ORDER BY sequence"
        ).all()
        for row in rows {
            guard let event = try event(row), let blanked = event.withoutPersonalData() else { continue }
            try await database.raw(
                """
                UPDATE lifecycle_events SET data = \(bind: try json(blanked.data))
                WHERE sequence = \(bind: event.sequence)
                """
            ).run()
        }
    }

    /// The event of a row, or `nil` for a type this siwa does not know (written by a newer one).
    static func event(_ row: any SQLRow) throws -> LifecycleEvent? {
        guard let type = LifecycleEventType(rawValue: try row.decode(column: "type", as: String.self)) else {
            return nil
        }
        guard let id = UUID(text: try row.decode(column: "id", as: String.self)) else {
            throw StoreError(.corrupt, "a stored lifecycle event id is not a UUID")
        }
        let data: [String: LifecycleEventValue]
        do {
            data = try JSONDecoder().decode(
                [String: LifecycleEventValue].self,
                from: Data(try row.decode(column: "data", as: String.self).utf8)
            )
        } catch {
            throw StoreError(.corrupt, "a stored lifecycle event's data is not a flat JSON object")
        }
        return LifecycleEvent(
            sequence: try row.decode(column: "sequence", as: Int64.self),
            id: id,
            type: type,
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            time: SQLValue.date(milliseconds: try row.decode(column: "occurred_at", as: Int64.self)),
            data: data
        )
    }

    /// The `channel` of a stored event's data (`session.ended`), `nil` when it names none.
    static func channel(ofData text: String) throws -> String? {
        struct Channel: Decodable { var channel: String? }
        do {
            return try JSONDecoder().decode(Channel.self, from: Data(text.utf8)).channel
        } catch {
            throw StoreError(.corrupt, "a stored lifecycle event's data is not a flat JSON object")
        }
    }

    /// `data` as a JSON object with sorted keys.
    static func json(_ data: [String: LifecycleEventValue]) throws -> String {
        try SQLValue.json(data)
    }

    /// `session.ended` events for `sessions` of `userID`.
    static func ended(
        _ sessions: [SQLEndedSession],
        userID: String,
        by actor: AuditActor,
        reason: String,
        now: Int64
    ) throws -> [LifecycleEvent] {
        let user = try SQLValue.userID(userID)
        let time = SQLValue.date(milliseconds: now)
        return try sessions.map { session in
            LifecycleEvent.sessionEnded(
                try SQLValue.sessionID(session.id),
                userID: user,
                channel: session.channel.map(SignInChannel.init(rawValue:)),
                by: actor,
                reason: reason,
                time: time
            )
        }
    }
}

/// A session an `UPDATE sessions … RETURNING id, channel` ended: what its `session.ended` event names.
struct SQLEndedSession {
    var id: String
    var channel: String?

    init(id: String, channel: String?) {
        self.id = id
        self.channel = channel
    }

    init(_ row: any SQLRow) throws {
        id = try row.decode(column: "id", as: String.self)
        channel = try row.decode(column: "channel", as: String?.self)
    }
}

extension SQLAccountStore {
    public func lifecycleEvents(after: Int64?, limit: Int) async throws(StoreError) -> [LifecycleEvent] {
        guard limit > 0 else { return [] }
        let after = after ?? 0
        let limit = Int64(limit)
        return try await read("list lifecycle events") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLLifecycleEvents.columns) FROM lifecycle_events
                WHERE sequence > \(bind: after)
                ORDER BY sequence LIMIT \(bind: limit)
                """
            ).all().compactMap(SQLLifecycleEvents.event)
        }
    }

    public func purgeLifecycleEvents(before: Date) async throws(StoreError) -> Int {
        let cutoff = try SQLValue.milliseconds(before)
        let finished: SQLQueryString = "state <> 'pending' AND created_at < \(bind: cutoff)"
        _ = try await purge(
            "webhook_attempts",
            key: "delivery_id, number",
            where: "delivery_id IN (SELECT id FROM webhook_deliveries WHERE \(finished))"
        )
        _ = try await purge("webhook_deliveries", key: "id", where: finished)
        return try await purge(
            "lifecycle_events",
            key: "sequence",
            where: """
                occurred_at < \(bind: cutoff) AND NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries d
                    WHERE d.event_sequence = lifecycle_events.sequence AND d.state = 'pending'
                )
                """
        )
    }
}

extension SQLAccountStore {
    /// The last sequence handed out (0 before the first event), also when its events were purged since.
    public func lastLifecycleEventSequence() async throws(StoreError) -> Int64 {
        try await read("read the lifecycle event sequence") { database in
            let last = try await database.raw("SELECT last FROM lifecycle_event_sequence WHERE id = 1").first()?
                .decode(column: "last", as: Int64.self)
            guard let last else { throw StoreError(.corrupt, "the lifecycle event sequence row is missing") }
            return last
        }
    }

    /// Moves the sequence forward to at least `sequence` (never back), so that the next event takes a larger one.
    /// A restore calls it with the replaced database's last sequence: a backend whose cursor came from that database
    /// then misses none of the events written after the restore.
    public func advanceLifecycleEventSequence(to sequence: Int64) async throws(StoreError) {
        try await write("advance the lifecycle event sequence") { database in
            try await database.raw(
                """
                UPDATE lifecycle_event_sequence SET last = \(bind: sequence)
                WHERE id = 1 AND last < \(bind: sequence)
                """
            ).run()
        }
    }
}
