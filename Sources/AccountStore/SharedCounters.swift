#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Counts that every instance sharing a store adds to, so that the limits an operator configures (the rate limits,
/// the web-flow and notification budgets; the sessions one identity token may open are kept by the store's sign-in,
/// ``NewSession/bound``) hold for the whole deployment
/// rather than for each process. Kept by a store that several processes share (PostgreSQL); a store used by one
/// process has none (``AccountStore/sharedCounters()`` is `nil`) and its process counts in memory.
///
/// A count is kept under a key and a window (a start time, in milliseconds; `0` for a count that is not windowed),
/// until its expiry. Keys carry no secret.
public protocol SharedCounters: Sendable {
    /// Adds every increment to its key's count in its window, in one statement, and returns each count after it.
    ///
    /// - Parameter increments: one per key and window (`count` is what to add, possibly 0 to read the count).
    /// - Returns: The deployment's counts after the addition, one per increment (`count` is the total).
    /// - Throws: ``StoreError/Code/unavailable`` when the database cannot be reached.
    func add(_ increments: [SharedCount]) async throws(StoreError) -> [SharedCount]

    /// Deletes the counts that expired before `now`.
    ///
    /// - Parameter now: The current time.
    /// - Returns: How many counts it deleted.
    /// - Throws: ``StoreError/Code/unavailable`` when the database cannot be reached.
    func purge(expiredBefore now: Date) async throws(StoreError) -> Int
}

/// A count of ``SharedCounters``: a key, the window it counts in, and a number (what to add, or the total).
public struct SharedCount: Sendable, Hashable {
    /// What is counted, e.g. `client:192.0.2.1`.
    public var key: String
    /// The window's start in milliseconds since 1970; `0` when the count is not windowed.
    public var window: Int64
    /// What to add, or the deployment's total.
    public var count: Int64
    /// When the count may be purged.
    public var expiresAt: Date

    /// - Parameters:
    ///   - key: What is counted.
    ///   - window: The window's start in milliseconds since 1970 (`0`: not windowed).
    ///   - count: What to add, or the total.
    ///   - expiresAt: When the count may be purged.
    public init(key: String, window: Int64, count: Int64, expiresAt: Date) {
        self.key = key
        self.window = window
        self.count = count
        self.expiresAt = expiresAt
    }
}

extension AccountStore {
    /// No shared counters: a store used by one process (in memory, SQLite), whose limits its process counts in memory.
    public func sharedCounters() -> (any SharedCounters)? { nil }
}
