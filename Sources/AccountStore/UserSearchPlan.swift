import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How ``AccountStore/searchUsers(_:limit:after:)`` reads a query and a cursor, written once for every store so that
/// they match and order alike.
///
/// A search runs in steps (``Step``); each step is one index range in SQL, ordered by its own key and then by id, and
/// answers only the accounts that no earlier step matched. A page takes the steps in order from the cursor's position
/// until it has one account more than asked (which tells whether there is a next page).
public struct UserSearchPlan: Sendable, Hashable {
    /// One way an account matches, in the order a search answers them.
    public enum Step: Int, Sendable, Hashable, CaseIterable, Comparable {
        /// An empty query: every account, newest first (by creation time, then id, both descending).
        case everyone = 0
        /// The account whose siwa id is the query.
        case userID
        /// The account whose Apple `sub` is the query.
        case appleUserID
        /// Accounts whose email key starts with the query's key.
        case email
        /// Accounts whose given name's key starts with the query's key.
        case givenName
        /// Accounts whose family name's key starts with the query's key.
        case familyName

        public static func < (lhs: Step, rhs: Step) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Where a page starts within a step: after the account with this key and id.
    public struct Position: Sendable, Hashable {
        public var step: Step
        /// The step's sort key of the last account answered (its creation time in milliseconds for
        /// ``Step/everyone``, empty for the exact steps).
        public var key: String
        /// Its id, lower-case.
        public var id: String
    }

    /// The query trimmed of surrounding whitespace (for the Apple `sub`, compared as it is).
    public let trimmed: String
    /// The query's ``SearchKey`` (for the prefixes).
    public let key: String
    /// The query as a siwa id, when it is one.
    public let userID: UserID?
    /// Where the page starts, from the cursor; `nil` for the first page.
    public let position: Position?

    /// The steps this query runs, in order.
    public var steps: [Step] {
        if trimmed.isEmpty { return [.everyone] }
        return (userID == nil ? [] : [.userID]) + [.appleUserID, .email, .givenName, .familyName]
    }

    /// The steps a page runs: from the cursor's step on.
    public var remainingSteps: [Step] {
        steps.filter { step in position.map { step >= $0.step } ?? true }
    }

    /// The upper bound of the prefix range (``SearchKey/upperBound(ofPrefix:)``).
    public var upperBound: String { SearchKey.upperBound(ofPrefix: key) }

    /// Reads `query` and `cursor`.
    /// - Throws: ``StoreError/Code/invalidInput`` for a cursor not made by a search for this same query.
    public init(query: String, cursor: PageCursor?) throws(StoreError) {
        var text = Substring(query)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        trimmed = String(text)
        key = SearchKey.of(trimmed)
        userID = UserID(trimmed)
        guard let cursor else {
            position = nil
            return
        }
        let parts = cursor.parts
        guard parts.count == 5, parts[0] == "users", parts[1] == key, let raw = Int(parts[2]),
            let step = Step(rawValue: raw), step == .everyone ? trimmed.isEmpty : !trimmed.isEmpty,
            step != .everyone || Int64(parts[3]) != nil, UserID(parts[4]) != nil
        else { throw StoreError(.invalidInput, "search users: the cursor is not one of this search") }
        position = Position(step: step, key: parts[3], id: parts[4])
    }

    /// The position within `step` to start after, or `nil` to start at its beginning.
    public func position(in step: Step) -> Position? {
        guard let position, position.step == step else { return nil }
        return position
    }

    /// The cursor of a page that ended with the account of `id`, whose key in `step` is `key`.
    public func cursor(step: Step, key sortKey: String, id: UserID) -> PageCursor {
        PageCursor(parts: ["users", key, String(step.rawValue), sortKey, id.description])
    }

    /// The sort key of `user` in `step` when it matches that step, else `nil` (for stores that filter in Swift).
    public func sortKey(of user: UserRecord, in step: Step) -> String? {
        func prefixed(_ text: String?) -> String? {
            guard let text else { return nil }
            let textKey = SearchKey.of(text)
            return textKey.utf8.starts(with: key.utf8) ? textKey : nil
        }
        switch step {
        case .everyone: return String(user.createdAt.storedMilliseconds)
        case .userID: return user.id == userID ? "" : nil
        case .appleUserID: return user.appleUserID.rawValue == trimmed ? "" : nil
        case .email: return prefixed(user.email)
        case .givenName: return prefixed(user.givenName)
        case .familyName: return prefixed(user.familyName)
        }
    }

    /// The first of ``steps`` that `user` matches (where a search answers it), or `nil`.
    public func firstStep(matching user: UserRecord) -> Step? {
        steps.first { sortKey(of: user, in: $0) != nil }
    }

    /// Whether an account with `key` and `id` comes before another in `step`'s order (ids as lower-case text; keys
    /// and ids compared by their UTF-8 bytes).
    public static func precedes(
        _ first: (key: String, id: String),
        _ second: (key: String, id: String),
        in step: Step
    )
        -> Bool
    {
        if step == .everyone {
            let (firstTime, secondTime) = (Int64(first.key) ?? 0, Int64(second.key) ?? 0)
            if firstTime != secondTime { return firstTime > secondTime }
            return second.id.utf8.lexicographicallyPrecedes(first.id.utf8)
        }
        if first.key != second.key { return first.key.utf8.lexicographicallyPrecedes(second.key.utf8) }
        return first.id.utf8.lexicographicallyPrecedes(second.id.utf8)
    }
}

/// Where a page of the audit log starts: after the event with this time and id (newest first).
public struct AuditLogPosition: Sendable, Hashable {
    /// The time in milliseconds since 1970.
    public var time: Int64
    /// The event's id, lower-case.
    public var id: String

    public init(time: Int64, id: UUID) {
        self.time = time
        self.id = Self.text(id)
    }

    /// Reads a cursor of the audit log; `nil` for none.
    /// - Throws: ``StoreError/Code/invalidInput`` for a cursor not made for the audit log.
    public init?(_ cursor: PageCursor?) throws(StoreError) {
        guard let cursor else { return nil }
        let parts = cursor.parts
        guard parts.count == 3, parts[0] == "audit", let time = Int64(parts[1]), let id = UUID(uuidString: parts[2])
        else { throw StoreError(.invalidInput, "audit events: the cursor is not one of the audit log") }
        self.init(time: time, id: id)
    }

    /// The cursor of a page that ended here.
    public var cursor: PageCursor { PageCursor(parts: ["audit", String(time), id]) }

    /// Whether an event at `time` with `id` comes after this position, newest first.
    public func isFollowed(byTime eventTime: Int64, id eventID: UUID) -> Bool {
        let other = Self.text(eventID)
        return eventTime < time || (eventTime == time && other.utf8.lexicographicallyPrecedes(id.utf8))
    }

    /// Whether the first event comes before the second, newest first.
    public static func precedes(_ first: (time: Int64, id: UUID), _ second: (time: Int64, id: UUID)) -> Bool {
        if first.time != second.time { return first.time > second.time }
        return text(second.id).utf8.lexicographicallyPrecedes(text(first.id).utf8)
    }

    /// An event id as stored: lower-case.
    public static func text(_ id: UUID) -> String { id.uuidString.lowercased() }
}

extension SessionRecord {
    /// Whether `first` is listed before `second` by ``AccountStore/sessions(userID:now:limit:)``: active sessions
    /// first, newest first; then ended ones, the most recently ended first; ties by id.
    public static func listedBefore(_ first: SessionRecord, _ second: SessionRecord, now: Date) -> Bool {
        let (firstActive, secondActive) = (first.isActive(at: now), second.isActive(at: now))
        if firstActive != secondActive { return firstActive }
        let firstTime = firstActive ? first.createdAt : (first.endedAt(now: now) ?? first.createdAt)
        let secondTime = secondActive ? second.createdAt : (second.endedAt(now: now) ?? second.createdAt)
        let (a, b) = (firstTime.storedMilliseconds, secondTime.storedMilliseconds)
        if a != b { return a > b }
        return first.id.description.utf8.lexicographicallyPrecedes(second.id.description.utf8)
    }
}

extension AuditEventCount {
    /// The order of ``AccountStore/auditEventCounts(from:until:types:now:)``: day, type, channel, reason (absent first).
    public static func orderedBefore(_ first: AuditEventCount, _ second: AuditEventCount) -> Bool {
        func key(_ count: AuditEventCount) -> [String] {
            [count.type.rawValue, count.channel?.rawValue ?? "", count.reason ?? ""]
        }
        if first.day != second.day { return first.day < second.day }
        return key(first).lexicographicallyPrecedes(key(second)) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

extension AuditEvent {
    /// The event ``AccountStore/grantAdmin(_:by:now:)`` and ``AccountStore/revokeAdmin(_:by:now:)`` record.
    public static func adminRole(
        _ type: AuditEventType,
        _ subject: AdminSubject,
        by actor: AuditActor,
        now: Date
    ) -> AuditEvent {
        AuditEvent(time: now, type: type, userID: subject.userID, actor: actor, details: ["subject": subject.rawValue])
    }
}
