import AppleSignIn

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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
