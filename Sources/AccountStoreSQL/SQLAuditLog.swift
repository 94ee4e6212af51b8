import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The audit log's rows (`audit_events`): how an ``AuditEvent`` is written and read back.
///
/// The typed fields are columns (the type's raw value, the actor's kind and admin subject, channel, client id, reason,
/// session id); ``AuditEvent/details`` is a JSON object of strings with sorted keys (`NULL` when empty).
enum SQLAuditLog {
    static let columns = """
        id, occurred_at, type, user_id, actor, actor_subject, channel, client_id, reason, session_id, details
        """

    /// The `INSERT … SELECT` of a returning user's sign-in event, for the single-statement sign-ins (SQLite's trigger,
    /// PostgreSQL's prepared statement), each value written as the statement names it and the account's `id` taken
    /// from `rows` (`FROM rows`: a row only for an account that is not disabled).
    static func returningSignIn(
        id: String,
        now: String,
        channel: String,
        clientID: String,
        sessionID: String,
        from rows: String
    ) -> String {
        let details = literal(json(["account": "returning"]) ?? "{}")
        return """
            INSERT INTO audit_events (id, occurred_at, type, user_id, actor, channel, client_id, session_id, details)
            SELECT \(id), \(now), \(literal(AuditEventType.signIn.rawValue)), id, \(literal(AuditActor.user.kind)),
                \(channel), \(clientID), \(sessionID), \(details)
            FROM \(rows)
            """
    }

    /// The `INSERT` of `event` (cut to its limits), with bound values.
    static func insert(_ event: AuditEvent) throws -> SQLQueryString {
        let event = event.limited()
        let id = AuditLogPosition.text(event.id)
        let time = try SQLValue.milliseconds(event.time)
        let details = json(event.details)
        return """
            INSERT INTO audit_events (\(unsafeRaw: columns)) VALUES (
                \(bind: id), \(bind: time), \(bind: event.type.rawValue), \(bind: event.userID?.description),
                \(bind: event.actor.kind), \(bind: event.actor.storedSubject), \(bind: event.channel?.rawValue),
                \(bind: event.clientID?.rawValue), \(bind: event.reason), \(bind: event.sessionID?.description),
                \(bind: details)
            )
            """
    }

    /// The event of a row, or `nil` for a type or actor this siwa does not know (written by a newer one).
    static func event(_ row: any SQLRow) throws -> AuditEvent? {
        guard let type = AuditEventType(rawValue: try row.decode(column: "type", as: String.self)),
            let actor = AuditActor(
                kind: try row.decode(column: "actor", as: String.self),
                subject: try row.decode(column: "actor_subject", as: String?.self)
            )
        else { return nil }
        guard let id = UUID(text: try row.decode(column: "id", as: String.self)) else {
            throw StoreError(.corrupt, "a stored audit event id is not a UUID")
        }
        return AuditEvent(
            id: id,
            time: SQLValue.date(milliseconds: try row.decode(column: "occurred_at", as: Int64.self)),
            type: type,
            userID: try row.decode(column: "user_id", as: String?.self).map(SQLValue.userID),
            actor: actor,
            channel: try row.decode(column: "channel", as: String?.self).map(SignInChannel.init(rawValue:)),
            clientID: try row.decode(column: "client_id", as: String?.self).map { ClientID($0) },
            reason: try row.decode(column: "reason", as: String?.self),
            sessionID: try row.decode(column: "session_id", as: String?.self).map(SQLValue.sessionID),
            details: try details(row.decode(column: "details", as: String?.self))
        )
    }

    /// `details` as a JSON object with sorted keys, or `nil` when empty.
    static func json(_ details: [String: String]) -> String? {
        guard !details.isEmpty else { return nil }
        return try? SQLValue.json(details)
    }

    private static func details(_ json: String?) throws -> [String: String] {
        guard let json else { return [:] }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        } catch {
            throw StoreError(.corrupt, "a stored audit event's details are not a JSON object of strings")
        }
    }

    /// `text` as an SQL string literal.
    private static func literal(_ text: String) -> String {
        "'" + text.replacing("'", with: "''") + "'"
    }
}
