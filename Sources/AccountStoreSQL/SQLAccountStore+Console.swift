public import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

// Closures passed to `read`/`write` call only untyped-throwing functions (see SQLAccountStore+Lifecycle.swift).

/// The operator console's calls: user search, account totals, sessions, the audit log and admin grants.
extension SQLAccountStore {
    // MARK: User search

    /// Runs ``UserSearchPlan``'s steps in order, each one statement on one index (`users_by_creation`, the primary
    /// key, `apple_user_id`'s, `users_by_email_key`, `users_by_given_name_key`, `users_by_family_name_key`), until
    /// the page has one account more than asked.
    public func searchUsers(
        _ query: String,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<UserRecord> {
        let plan = try UserSearchPlan(query: query, cursor: cursor)
        guard limit > 0 else { return Page(items: [], next: cursor) }
        let wanted = limit + 1
        let found = try await read("search users") { database in
            var found: [(step: UserSearchPlan.Step, key: String, user: UserRecord)] = []
            for step in plan.remainingSteps where found.count < wanted {
                guard let statement = Self.searchStatement(plan, step, limit: wanted - found.count) else { continue }
                for row in try await database.raw(statement).all() {
                    found.append((step, try Self.searchKey(row, step), try SQLRecords.user(row)))
                }
            }
            return found
        }
        let page = Array(found.prefix(limit))
        let last = found.count > limit ? page.last : nil
        return Page(items: page.map(\.user), next: last.map { plan.cursor(step: $0.step, key: $0.key, id: $0.user.id) })
    }

    /// The statement of one step, at most `limit` accounts after the plan's position; `nil` when the step has
    /// nothing left (an exact match already answered).
    private static func searchStatement(
        _ plan: UserSearchPlan,
        _ step: UserSearchPlan.Step,
        limit: Int
    ) -> SQLQueryString? {
        let position = plan.position(in: step)
        let limit = Int64(limit)
        let columns = SQLRecords.userColumns
        // The accounts an earlier step answers.
        var earlier: [SQLQueryString] = []
        if step > .userID, let userID = plan.userID { earlier.append("id <> \(bind: userID.description)") }
        if step > .appleUserID { earlier.append("apple_user_id <> \(bind: plan.trimmed)") }
        let keyColumns: [UserSearchPlan.Step: String] = [
            .email: "email_key", .givenName: "given_name_key", .familyName: "family_name_key",
        ]
        for (earlierStep, column) in keyColumns where earlierStep < step {
            earlier.append(
                """
                (\(unsafeRaw: column) IS NULL OR \(unsafeRaw: column) < \(bind: plan.key)
                    OR \(unsafeRaw: column) >= \(bind: plan.upperBound))
                """
            )
        }
        switch step {
        case .everyone:
            var conditions: [SQLQueryString] = ["1 = 1"]
            if let position, let time = Int64(position.key) {
                conditions.append(
                    """
                    created_at <= \(bind: time)
                        AND (created_at < \(bind: time) OR id < \(bind: position.id))
                    """
                )
            }
            return """
                SELECT \(unsafeRaw: columns) FROM users WHERE \(conditions.joined(separator: " AND "))
                ORDER BY created_at DESC, id DESC LIMIT \(bind: limit)
                """
        case .userID:
            guard position == nil, let userID = plan.userID else { return nil }
            return "SELECT \(unsafeRaw: columns) FROM users WHERE id = \(bind: userID.description)"
        case .appleUserID:
            guard position == nil else { return nil }
            let conditions: [SQLQueryString] = ["apple_user_id = \(bind: plan.trimmed)"] + earlier
            return "SELECT \(unsafeRaw: columns) FROM users WHERE \(conditions.joined(separator: " AND "))"
        case .email, .givenName, .familyName:
            let column = keyColumns[step] ?? "email_key"
            var conditions: [SQLQueryString] = [
                "\(unsafeRaw: column) >= \(bind: plan.key) AND \(unsafeRaw: column) < \(bind: plan.upperBound)"
            ]
            if let position {
                conditions.append(
                    """
                    \(unsafeRaw: column) >= \(bind: position.key)
                        AND (\(unsafeRaw: column) > \(bind: position.key) OR id > \(bind: position.id))
                    """
                )
            }
            conditions += earlier
            return """
                SELECT \(unsafeRaw: columns), \(unsafeRaw: column) AS search_key FROM users
                WHERE \(conditions.joined(separator: " AND "))
                ORDER BY \(unsafeRaw: column), id LIMIT \(bind: limit)
                """
        }
    }

    /// The sort key of a row in `step` (see ``UserSearchPlan/Position/key``).
    private static func searchKey(_ row: any SQLRow, _ step: UserSearchPlan.Step) throws -> String {
        switch step {
        case .everyone: String(try row.decode(column: "created_at", as: Int64.self))
        case .userID, .appleUserID: ""
        case .email, .givenName, .familyName: try row.decode(column: "search_key", as: String.self)
        }
    }

    /// Every count is one index: all accounts, and those created since a time (`users_by_creation`), less the
    /// anonymised ones among them (the partial index `users_anonymised`, which holds only those).
    public func accountTotals(createdSince: [Date]) async throws(StoreError) -> AccountTotals {
        var dates: [(date: Date, milliseconds: Int64)] = []
        for date in createdSince { dates.append((date, try SQLValue.milliseconds(date))) }
        let since = dates
        let counts = try await read("count accounts") { database in
            func count(_ condition: SQLQueryString) async throws -> Int {
                let all = try await database.raw("SELECT COUNT(*) AS n FROM users WHERE \(condition)").first()
                let anonymised = try await database.raw(
                    "SELECT COUNT(*) AS n FROM users WHERE \(condition) AND apple_user_id LIKE 'anonymised:%'"
                ).first()
                return Int(try all?.decode(column: "n", as: Int64.self) ?? 0)
                    - Int(try anonymised?.decode(column: "n", as: Int64.self) ?? 0)
            }
            var counts: [Int] = [try await count("created_at >= \(bind: Int64.min)")]
            for (_, milliseconds) in since { counts.append(try await count("created_at >= \(bind: milliseconds)")) }
            return counts
        }
        var createdSinceCounts: [Date: Int] = [:]
        for (index, entry) in since.enumerated() { createdSinceCounts[entry.date] = counts[index + 1] }
        return AccountTotals(total: counts[0], createdSince: createdSinceCounts)
    }

    // MARK: Sessions

    /// One statement: the user's sessions (`sessions_by_user`) with their refresh tokens' newest expiry, use and
    /// check (`refresh_tokens_by_session`), ordered as ``SessionRecord/listedBefore(_:_:now:)`` orders them.
    public func sessions(userID: UserID, now: Date, limit: Int) async throws(StoreError) -> [SessionRecord] {
        guard limit > 0 else { return [] }
        let userID = userID.description
        let nowMilliseconds = try SQLValue.milliseconds(now)
        let limit = Int64(limit)
        let records = try await read("list a user's sessions") { database in
            try await database.raw(
                """
                SELECT * FROM (
                    SELECT s.id AS id, s.user_id AS user_id, s.created_at AS created_at, s.revoked_at AS revoked_at,
                        s.channel AS channel, s.user_agent AS user_agent, s.client_address AS client_address,
                        MAX(t.expires_at) AS expires_at, MAX(t.used_at) AS used_at,
                        MAX(t.last_checked_at) AS last_checked_at
                    FROM sessions s LEFT JOIN refresh_tokens t ON t.session_id = s.id
                    WHERE s.user_id = \(bind: userID)
                    GROUP BY s.id, s.user_id, s.created_at, s.revoked_at, s.channel, s.user_agent, s.client_address
                ) listed
                ORDER BY
                    CASE WHEN revoked_at IS NULL AND expires_at > \(bind: nowMilliseconds) THEN 0 ELSE 1 END,
                    CASE
                        WHEN revoked_at IS NULL AND expires_at > \(bind: nowMilliseconds) THEN created_at
                        WHEN revoked_at IS NOT NULL THEN revoked_at
                        WHEN expires_at IS NOT NULL THEN expires_at
                        ELSE created_at
                    END DESC,
                    id DESC
                LIMIT \(bind: limit)
                """
            ).all().map(Self.sessionRecord)
        }
        return records.sorted { SessionRecord.listedBefore($0, $1, now: now) }
    }

    private static func sessionRecord(_ row: any SQLRow) throws -> SessionRecord {
        let used = try row.decode(column: "used_at", as: Int64?.self)
        let checked = try row.decode(column: "last_checked_at", as: Int64?.self)
        let lastUse = [used, checked].compactMap { $0 }.max()
        return SessionRecord(
            id: try SQLValue.sessionID(row.decode(column: "id", as: String.self)),
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            lastUsedAt: lastUse.map(SQLValue.date),
            expiresAt: try row.decode(column: "expires_at", as: Int64?.self).map(SQLValue.date),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(SQLValue.date),
            metadata: SessionMetadata(
                channel: try row.decode(column: "channel", as: String?.self).map(SignInChannel.init(rawValue:)),
                userAgent: try row.decode(column: "user_agent", as: String?.self),
                clientAddress: try row.decode(column: "client_address", as: String?.self)
            )
        )
    }

    // MARK: Audit log

    public func appendAuditEvent(_ event: AuditEvent) async throws(StoreError) {
        _ = try SQLValue.milliseconds(event.time)  // A time out of range is invalid input, not a driver error.
        try await writeStatements("append an audit event") { database in
            try await database.raw(SQLAuditLog.insert(event)).run()
        }
    }

    /// Newest first on one index: `audit_events_by_user` for a user, `audit_events_by_type` for types (one statement
    /// per type, merged here), `audit_events_by_time` otherwise; each statement starts at the cursor and reads at most
    /// one event more than asked.
    public func auditEvents(
        _ filter: AuditEventFilter,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<AuditEvent> {
        let position = try AuditLogPosition(cursor)
        guard limit > 0 else { return Page(items: [], next: cursor) }
        if let types = filter.types, types.isEmpty { return Page(items: [], next: nil) }
        var conditions: [SQLQueryString] = ["1 = 1"]
        if let since = filter.since {
            let since = try SQLValue.milliseconds(since)
            conditions.append("occurred_at >= \(bind: since)")
        }
        if let until = filter.until {
            let until = try SQLValue.milliseconds(until)
            conditions.append("occurred_at < \(bind: until)")
        }
        if let position {
            conditions.append(
                """
                occurred_at <= \(bind: position.time)
                    AND (occurred_at < \(bind: position.time) OR id < \(bind: position.id))
                """
            )
        }
        // One statement per index range: the user's, each type's, or the whole log.
        let selections: [SQLQueryString]
        let types = filter.types.map { Array($0).sorted { $0.rawValue < $1.rawValue } }
        if let userID = filter.userID {
            var own = conditions + ["user_id = \(bind: userID.description)"]
            if let types {
                own.append(
                    "type IN (\(types.map { "\(bind: $0.rawValue)" as SQLQueryString }.joined(separator: ", ")))"
                )
            }
            selections = [own.joined(separator: " AND ")]
        } else if let types {
            selections = types.map { type in (conditions + ["type = \(bind: type.rawValue)"]).joined(separator: " AND ")
            }
        } else {
            selections = [conditions.joined(separator: " AND ")]
        }
        let wanted = Int64(limit + 1)
        let events = try await read("list audit events") { database in
            var events: [AuditEvent] = []
            for selection in selections {
                let rows = try await database.raw(
                    """
                    SELECT \(unsafeRaw: SQLAuditLog.columns) FROM audit_events WHERE \(selection)
                    ORDER BY occurred_at DESC, id DESC LIMIT \(bind: wanted)
                    """
                ).all()
                events += try rows.compactMap(SQLAuditLog.event)
            }
            return events
        }
        let ordered = events.sorted {
            AuditLogPosition.precedes((Self.milliseconds($0.time), $0.id), (Self.milliseconds($1.time), $1.id))
        }
        let page = Array(ordered.prefix(limit))
        let last = ordered.count > limit ? page.last : nil
        return Page(
            items: page,
            next: last.map { AuditLogPosition(time: Self.milliseconds($0.time), id: $0.id).cursor }
        )
    }

    /// Settled days come from `audit_daily_counts`; a settled day not counted yet is counted first, once: its events
    /// are read and aggregated without a lock, then its counts and its mark in `audit_counted_days` are written in one
    /// short transaction (of racing instances, the first mark wins). Newer days are aggregated from
    /// `audit_events_by_type`, which holds channel and reason, one statement per type.
    public func auditEventCounts(
        from: Date,
        until: Date,
        types: Set<AuditEventType>,
        now: Date
    ) async throws(StoreError) -> [AuditEventCount] {
        guard let days = AuditEventCount.days(from: from, until: until), !types.isEmpty else { return [] }
        let lastSettled = min(days.upperBound, AuditEventCount.lastSettledDay(now: now))
        if days.lowerBound <= lastSettled {
            try await countSettledDays(days.lowerBound...lastSettled)
        }
        let dayLength = AuditEventCount.dayMilliseconds
        let typeNames = types.map(\.rawValue).sorted()
        let counts = try await read("count audit events") { database in
            var rows: [any SQLRow] = []
            if days.lowerBound <= lastSettled {
                let names = typeNames.map { "\(bind: $0)" as SQLQueryString }.joined(separator: ", ")
                rows += try await database.raw(
                    """
                    SELECT day, type, channel, reason, count AS n FROM audit_daily_counts
                    WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: lastSettled) AND type IN (\(names))
                    """
                ).all()
            }
            let liveFrom = max(days.lowerBound, lastSettled + 1)
            for type in typeNames where liveFrom <= days.upperBound {
                rows += try await database.raw(
                    """
                    SELECT occurred_at / \(bind: dayLength) AS day, type, COALESCE(channel, '') AS channel,
                        COALESCE(reason, '') AS reason, COUNT(*) AS n
                    FROM audit_events
                    WHERE type = \(bind: type) AND occurred_at >= \(bind: liveFrom * dayLength)
                        AND occurred_at < \(bind: (days.upperBound + 1) * dayLength)
                    GROUP BY 1, 2, 3, 4
                    """
                ).all()
            }
            return try rows.compactMap(Self.dailyCount)
        }
        return counts.sorted(by: AuditEventCount.orderedBefore)
    }

    /// Counts and keeps each day of `days` that is not counted yet.
    private func countSettledDays(_ days: ClosedRange<Int64>) async throws(StoreError) {
        let dayLength = AuditEventCount.dayMilliseconds
        // Days before the oldest event hold none: they need no mark.
        let (counted, oldest) = try await read("find the counted days") { database in
            let counted = try await database.raw(
                """
                SELECT day FROM audit_counted_days
                WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound)
                """
            ).all().map { try $0.decode(column: "day", as: Int64.self) }
            let oldest = try await database.raw("SELECT MIN(occurred_at) AS oldest FROM audit_events").first()?
                .decode(column: "oldest", as: Int64?.self)
            return (Set(counted), oldest)
        }
        guard let oldest else { return }
        for day in days where !counted.contains(day) && (day + 1) * dayLength > oldest {
            let groups = try await read("count a day's audit events") { database in
                try await database.raw(
                    """
                    SELECT type, COALESCE(channel, '') AS channel, COALESCE(reason, '') AS reason, COUNT(*) AS n
                    FROM audit_events
                    WHERE occurred_at >= \(bind: day * dayLength) AND occurred_at < \(bind: (day + 1) * dayLength)
                    GROUP BY 1, 2, 3
                    """
                ).all().map { row in
                    (
                        type: try row.decode(column: "type", as: String.self),
                        channel: try row.decode(column: "channel", as: String.self),
                        reason: try row.decode(column: "reason", as: String.self),
                        count: try row.decode(column: "n", as: Int64.self)
                    )
                }
            }
            try await write("keep a day's audit counts") { database in
                let marked = try await database.raw(
                    "INSERT INTO audit_counted_days (day) VALUES (\(bind: day)) ON CONFLICT (day) DO NOTHING RETURNING day"
                ).first()
                guard marked != nil, !groups.isEmpty else { return }
                let values = groups.map { group -> SQLQueryString in
                    """
                    (\(bind: day), \(bind: group.type), \(bind: group.channel), \(bind: group.reason), \(bind: group.count))
                    """
                }
                try await database.raw(
                    """
                    INSERT INTO audit_daily_counts (day, type, channel, reason, count)
                    VALUES \(values.joined(separator: ", "))
                    """
                ).run()
            }
        }
    }

    /// A count row (`day`, `type`, `channel` and `reason` empty for none, `n`); `nil` for a type this siwa does not
    /// know.
    private static func dailyCount(_ row: any SQLRow) throws -> AuditEventCount? {
        guard let type = AuditEventType(rawValue: try row.decode(column: "type", as: String.self)) else { return nil }
        let channel = try row.decode(column: "channel", as: String.self)
        let reason = try row.decode(column: "reason", as: String.self)
        return AuditEventCount(
            day: AuditEventCount.start(ofDay: try row.decode(column: "day", as: Int64.self)),
            type: type,
            channel: channel.isEmpty ? nil : SignInChannel(rawValue: channel),
            reason: reason.isEmpty ? nil : reason,
            count: Int(try row.decode(column: "n", as: Int64.self))
        )
    }

    /// Deletes in batches of 10,000 (oldest first), each one statement that commits on its own, so that sign-ins
    /// wait for one batch at most.
    @discardableResult
    public func purgeAuditEvents(before: Date) async throws(StoreError) -> Int {
        let cutoff = try SQLValue.milliseconds(before)
        let batch = Int64(Self.purgeBatch)
        var total = 0
        while true {
            let deleted = try await writeStatements("purge audit events") { database in
                try await database.raw(
                    """
                    DELETE FROM audit_events WHERE id IN (
                        SELECT id FROM audit_events WHERE occurred_at < \(bind: cutoff)
                        ORDER BY occurred_at LIMIT \(bind: batch)
                    )
                    RETURNING id
                    """
                ).all().count
            }
            total += deleted
            if deleted < batch { break }
        }
        // The kept counts of the days that ended by the cutoff.
        let lastDay = cutoff / AuditEventCount.dayMilliseconds - 1
        try await write("purge audit counts") { database in
            try await database.raw("DELETE FROM audit_daily_counts WHERE day <= \(bind: lastDay)").run()
            try await database.raw("DELETE FROM audit_counted_days WHERE day <= \(bind: lastDay)").run()
        }
        return total
    }

    // MARK: Admin grants

    public func grantAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        let grantedAt = try SQLValue.milliseconds(now)
        let event = AuditEvent.adminRole(.adminGranted, subject, by: actor, now: now)
        return try await write("grant the admin role") { database in
            let inserted = try await database.raw(
                """
                INSERT INTO admin_grants (subject, granted_by, granted_by_subject, granted_at)
                VALUES (
                    \(bind: subject.rawValue), \(bind: actor.kind), \(bind: actor.storedSubject), \(bind: grantedAt)
                )
                ON CONFLICT (subject) DO NOTHING
                RETURNING subject
                """
            ).first()
            guard inserted != nil else { return false }
            try await database.raw(SQLAuditLog.insert(event)).run()
            return true
        }
    }

    public func revokeAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        _ = try SQLValue.milliseconds(now)
        let event = AuditEvent.adminRole(.adminRevoked, subject, by: actor, now: now)
        return try await write("revoke the admin role") { database in
            let deleted = try await database.raw(
                "DELETE FROM admin_grants WHERE subject = \(bind: subject.rawValue) RETURNING subject"
            ).first()
            guard deleted != nil else { return false }
            try await database.raw(SQLAuditLog.insert(event)).run()
            return true
        }
    }

    public func adminGrants() async throws(StoreError) -> [AdminGrant] {
        let grants = try await read("list admin grants") { database in
            try await database.raw(
                "SELECT subject, granted_by, granted_by_subject, granted_at FROM admin_grants ORDER BY granted_at"
            ).all().map(Self.adminGrant)
        }
        return grants.sorted { ($0.grantedAt, $0.subject) < ($1.grantedAt, $1.subject) }
    }

    public func isAdmin(_ subject: AdminSubject) async throws(StoreError) -> Bool {
        try await read("check an admin") { database in
            try await database.raw("SELECT 1 AS found FROM admin_grants WHERE subject = \(bind: subject.rawValue)")
                .first() != nil
        }
    }

    private static func adminGrant(_ row: any SQLRow) throws -> AdminGrant {
        let subject = try row.decode(column: "subject", as: String.self)
        guard let subject = AdminSubject(subject),
            let actor = AuditActor(
                kind: try row.decode(column: "granted_by", as: String.self),
                subject: try row.decode(column: "granted_by_subject", as: String?.self)
            )
        else { throw StoreError(.corrupt, "a stored admin grant cannot be read") }
        return AdminGrant(
            subject: subject,
            grantedBy: actor,
            grantedAt: SQLValue.date(milliseconds: try row.decode(column: "granted_at", as: Int64.self))
        )
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000).rounded())
    }
}
