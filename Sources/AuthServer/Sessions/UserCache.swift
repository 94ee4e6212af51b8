public import AccountStore
public import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Accounts read recently, so that `GET /api/me` needs no database read. Changes made through this instance are
/// applied at once; changes made by other instances arrive with the next refresh from the store (every few seconds),
/// which drops every account changed since the last one.
public final class UserCache: Sendable {
    /// An account with its `user` object already encoded.
    public struct Entry: Sendable {
        public let user: UserRecord
        public let json: ByteBuffer

        init(_ user: UserRecord) {
            self.user = user
            self.json = ByteBuffer(bytes: UserResponse(user).jsonBytes)
        }
    }

    private struct State {
        var users: [UserID: Entry] = [:]
        /// Bumped by every invalidation, so that a read that raced one does not put back what it removed.
        var generation: UInt64 = 0
        var lastRefresh: Date?
    }

    private let state = Mutex(State())
    private let capacity: Int

    /// - Parameter capacity: the most accounts kept; beyond it the cache starts over.
    public init(capacity: Int = 50_000) {
        self.capacity = max(1, capacity)
    }

    /// The account, from memory or else from `store` (and then kept).
    public func user(id: UserID, store: any AccountStore) async throws -> UserRecord? {
        try await entry(id: id, store: store)?.user
    }

    /// The account and its encoded `user` object, from memory or else from `store` (and then kept).
    public func entry(id: UserID, store: any AccountStore) async throws -> Entry? {
        let (cached, generation) = state.withLock { ($0.users[id], $0.generation) }
        if let cached { return cached }
        guard let user = try await store.user(id: id) else { return nil }
        let entry = Entry(user)
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.users.count >= capacity { state.users.removeAll(keepingCapacity: true) }
            state.users[id] = entry
        }
        return entry
    }

    /// Keeps an account this instance just wrote, and returns its entry: a sign-in answers the `user` object this
    /// encoded (encoded outside the lock).
    ///
    /// An account the cache holds as it is (a returning user whose sign-in changed nothing, the usual case: see
    /// ``UserRecord/lastSignInResolution``) keeps its entry, and its `user` object is not encoded again.
    @discardableResult
    public func update(_ user: UserRecord) -> Entry {
        let cached = state.withLock { $0.users[user.id] }
        let entry = cached.flatMap { $0.user == user ? $0 : nil } ?? Entry(user)
        state.withLock { state in
            // Bumped even when unchanged: a read that fetched the account before this write must not keep what it read.
            state.generation &+= 1
            // Full: start over, unless this account is in it already (then nothing grows).
            if state.users[user.id] == nil, state.users.count >= capacity {
                state.users.removeAll(keepingCapacity: true)
            }
            state.users[user.id] = entry
        }
        return entry
    }

    /// Forgets an account (changed or deleted).
    public func invalidate(_ id: UserID) {
        state.withLock { state in
            state.generation &+= 1
            state.users[id] = nil
        }
    }

    /// Drops the accounts changed in the store since the last refresh (with a little overlap for clock skew).
    public func refresh(from store: any AccountStore, now: Date) async throws {
        let since = state.withLock { $0.lastRefresh?.addingTimeInterval(-30) }
        guard let since else {
            // The first refresh only marks the time: the cache starts empty.
            state.withLock { $0.lastRefresh = now }
            return
        }
        let changed = try await store.usersChanged(since: since)
        state.withLock { state in
            if !changed.isEmpty { state.generation &+= 1 }
            for id in changed { state.users[id] = nil }
            state.lastRefresh = now
        }
    }
}
