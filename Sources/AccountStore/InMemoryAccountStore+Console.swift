import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The operator console's calls: user search, sessions, the audit log and admin grants. Each answers by sorting what
/// it keeps in memory, in the same orders as the SQL store.
extension InMemoryAccountStore {
    // MARK: User search

    public func searchUsers(
        _ query: String,
        limit: Int,
        after cursor: PageCursor?
    ) throws(StoreError) -> Page<UserRecord> {
        try checkAvailable()
        let plan = try UserSearchPlan(query: query, cursor: cursor)
        guard limit > 0 else { return Page(items: [], next: cursor) }
        var found: [(step: UserSearchPlan.Step, key: String, user: UserRecord)] = []
        for step in plan.remainingSteps where found.count <= limit {
            let start = plan.position(in: step).map { (key: $0.key, id: $0.id) }
            let matches = users.values.compactMap { user -> (key: String, user: UserRecord)? in
                guard plan.firstStep(matching: user) == step, let key = plan.sortKey(of: user, in: step) else {
                    return nil
                }
                if let start, !UserSearchPlan.precedes(start, (key, user.id.description), in: step) { return nil }
                return (key, user)
            }
            let ordered = matches.sorted {
                UserSearchPlan.precedes(($0.key, $0.user.id.description), ($1.key, $1.user.id.description), in: step)
            }
            found += ordered.prefix(limit + 1 - found.count).map { (step, $0.key, $0.user) }
        }
        let page = Array(found.prefix(limit))
        let last = found.count > limit ? page.last : nil
        return Page(items: page.map(\.user), next: last.map { plan.cursor(step: $0.step, key: $0.key, id: $0.user.id) })
    }

    public func accountTotals(createdSince: [Date]) throws(StoreError) -> AccountTotals {
        try checkAvailable()
        let live = users.values.filter { $0.status != .deleted }
        var since: [Date: Int] = [:]
        for date in createdSince {
            since[date] = live.filter { $0.createdAt.storedMilliseconds >= date.storedMilliseconds }.count
        }
        return AccountTotals(total: live.count, createdSince: since)
    }

    // MARK: Sessions

    public func sessions(userID: UserID, now: Date, limit: Int) throws(StoreError) -> [SessionRecord] {
        try checkAvailable()
        guard limit > 0 else { return [] }
        // A session's last use is its tokens' latest rotation or check; its expiry, its newest token's.
        var expiries: [SessionID: Date] = [:]
        var lastUses: [SessionID: Date] = [:]
        for token in tokens.values where token.record.userID == userID {
            let id = token.record.sessionID
            expiries[id] = max(expiries[id] ?? .distantPast, token.record.expiresAt)
            for use in [token.usedAt, token.lastCheckedAt].compactMap(\.self) {
                lastUses[id] = max(lastUses[id] ?? .distantPast, use)
            }
        }
        let records = sessions.filter { $0.value.userID == userID }.map { id, session in
            SessionRecord(
                id: id,
                userID: userID,
                createdAt: session.createdAt,
                lastUsedAt: lastUses[id],
                expiresAt: expiries[id],
                revokedAt: session.revokedAt,
                metadata: session.metadata
            )
        }
        return Array(records.sorted { SessionRecord.listedBefore($0, $1, now: now) }.prefix(limit))
    }

    // MARK: Audit log

    public func appendAuditEvent(_ event: AuditEvent) throws(StoreError) {
        try checkAvailable()
        guard !auditLog.contains(where: { $0.id == event.id }) else {
            throw StoreError(.duplicate, "an audit event with this id exists")
        }
        auditLog.append(event.limited())
    }

    public func auditEvents(
        _ filter: AuditEventFilter,
        limit: Int,
        after cursor: PageCursor?
    ) throws(StoreError) -> Page<AuditEvent> {
        try checkAvailable()
        let position = try AuditLogPosition(cursor)
        guard limit > 0 else { return Page(items: [], next: cursor) }
        let matching = auditLog.filter { event in
            let time = event.time.storedMilliseconds
            if let userID = filter.userID, event.userID != userID { return false }
            if let types = filter.types, !types.contains(event.type) { return false }
            if let since = filter.since, time < since.storedMilliseconds { return false }
            if let until = filter.until, time >= until.storedMilliseconds { return false }
            if let position, !position.isFollowed(byTime: time, id: event.id) { return false }
            return true
        }
        let ordered = matching.sorted {
            AuditLogPosition.precedes(($0.time.storedMilliseconds, $0.id), ($1.time.storedMilliseconds, $1.id))
        }
        let page = Array(ordered.prefix(limit))
        let last = ordered.count > limit ? page.last : nil
        return Page(
            items: page,
            next: last.map { AuditLogPosition(time: $0.time.storedMilliseconds, id: $0.id).cursor }
        )
    }

    public func auditEventCounts(
        from: Date,
        until: Date,
        types: Set<AuditEventType>,
        now: Date
    ) throws(StoreError) -> [AuditEventCount] {
        try checkAvailable()
        guard let days = AuditEventCount.days(from: from, until: until), !types.isEmpty else { return [] }
        // Settled days are counted once and kept, as the SQL store keeps them.
        let lastSettled = AuditEventCount.lastSettledDay(now: now)
        var counts: [AuditEventCount] = []
        for day in days {
            if day <= lastSettled {
                if countedDays[day] == nil { countedDays[day] = count(day: day) }
                counts += countedDays[day, default: []]
            } else {
                counts += count(day: day)
            }
        }
        return counts.filter { types.contains($0.type) }.sorted(by: AuditEventCount.orderedBefore)
    }

    /// Every type's events on `day`, counted by type, channel and reason.
    private func count(day: Int64) -> [AuditEventCount] {
        var counts: [AuditEventCount: Int] = [:]
        for event in auditLog where AuditEventCount.day(of: event.time) == day {
            let key = AuditEventCount(
                day: AuditEventCount.start(ofDay: day),
                type: event.type,
                channel: event.channel,
                reason: event.reason,
                count: 0
            )
            counts[key, default: 0] += 1
        }
        return counts.map { key, count in
            var counted = key
            counted.count = count
            return counted
        }
    }

    public func purgeAuditEvents(before: Date) throws(StoreError) -> Int {
        try checkAvailable()
        let cutoff = before.storedMilliseconds
        let count = auditLog.count
        auditLog.removeAll { $0.time.storedMilliseconds < cutoff }
        countedDays = countedDays.filter { day, _ in (day + 1) * AuditEventCount.dayMilliseconds > cutoff }
        return count - auditLog.count
    }

    // MARK: Admin grants

    public func grantAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) throws(StoreError) -> Bool {
        try checkAvailable()
        guard adminGrantsBySubject[subject] == nil else { return false }
        adminGrantsBySubject[subject] = AdminGrant(subject: subject, grantedBy: actor, grantedAt: now)
        auditLog.append(AuditEvent.adminRole(.adminGranted, subject, by: actor, now: now))
        return true
    }

    public func revokeAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) throws(StoreError) -> Bool {
        try checkAvailable()
        guard adminGrantsBySubject.removeValue(forKey: subject) != nil else { return false }
        auditLog.append(AuditEvent.adminRole(.adminRevoked, subject, by: actor, now: now))
        return true
    }

    public func adminGrants() throws(StoreError) -> [AdminGrant] {
        try checkAvailable()
        return adminGrantsBySubject.values.sorted {
            ($0.grantedAt, $0.subject.rawValue) < ($1.grantedAt, $1.subject.rawValue)
        }
    }

    public func isAdmin(_ subject: AdminSubject) throws(StoreError) -> Bool {
        try checkAvailable()
        return adminGrantsBySubject[subject] != nil
    }

    // MARK: Service tokens

    public func createAdminToken(_ token: AdminToken, tokenHash: [UInt8]) throws(StoreError) {
        try checkAvailable()
        guard
            !adminTokensWithHashes.contains(where: {
                $0.hash == tokenHash || ($0.token.name == token.name && $0.token.revokedAt == nil)
            })
        else { throw StoreError(.duplicate, "a service token not revoked has that name") }
        adminTokensWithHashes.append((token, tokenHash))
        auditLog.append(token.auditEvent(.adminTokenCreated, by: token.createdBy, now: token.createdAt))
    }

    public func adminToken(tokenHash: [UInt8]) throws(StoreError) -> AdminToken? {
        try checkAvailable()
        return adminTokensWithHashes.first { $0.hash == tokenHash }?.token
    }

    public func adminTokens() throws(StoreError) -> [AdminToken] {
        try checkAvailable()
        return adminTokensWithHashes.map { $0.token }
    }

    public func revokeAdminToken(named name: String, by actor: AuditActor, now: Date) throws(StoreError) -> AdminToken?
    {
        try checkAvailable()
        guard
            let index = adminTokensWithHashes.firstIndex(where: { $0.token.name == name && $0.token.revokedAt == nil })
        else { return nil }
        adminTokensWithHashes[index].token.revokedAt = now
        let token = adminTokensWithHashes[index].token
        auditLog.append(token.auditEvent(.adminTokenRevoked, by: actor, now: now))
        return token
    }

    public func noteAdminTokenUse(_ id: UUID, at time: Date) throws(StoreError) {
        try checkAvailable()
        guard let index = adminTokensWithHashes.firstIndex(where: { $0.token.id == id }) else { return }
        adminTokensWithHashes[index].token.lastUsedAt = time
    }

}
