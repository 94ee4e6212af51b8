public import AccountStore
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Sessions revoked recently, held in memory so that checking an access token needs no database read. Revocations
/// made here count at once; those made by other instances arrive with the next refresh from the store (every few
/// seconds). Entries are dropped once every access token of their session has expired.
public final class RevocationList: Sendable {
    private struct State {
        var revoked: [SessionID: Date] = [:]
        /// Accounts deleted or anonymised: every access token of theirs is refused.
        var deletedUsers: [UserID: Date] = [:]
        var lastRefresh: Date?
    }

    private let state = Mutex(State())
    private let retention: TimeInterval

    /// - Parameter retention: how long a revocation is kept (the access-token lifetime plus a margin).
    public init(retention: TimeInterval) {
        self.retention = retention
    }

    /// What the list knows of an access token's session and account.
    public enum Status: Sendable, Equatable {
        case active
        case sessionRevoked
        case accountDeleted
    }

    /// The session's and the account's state, under one lock (the per-request check).
    public func status(of sessionID: SessionID, userID: UserID) -> Status {
        state.withLock { state in
            if state.revoked[sessionID] != nil { return .sessionRevoked }
            if state.deletedUsers[userID] != nil { return .accountDeleted }
            return .active
        }
    }

    public func add(_ sessionID: SessionID, at date: Date) {
        state.withLock { $0.revoked[sessionID] = date }
    }

    /// Refuses every access token of a deleted (or anonymised) account.
    public func addDeletedUser(_ userID: UserID, at date: Date) {
        state.withLock { $0.deletedUsers[userID] = date }
    }

    /// Pulls session revocations and account deletions from the store since the last refresh (with a little overlap
    /// for clock skew).
    public func refresh(from store: any AccountStore, now: Date) async throws {
        let since = state.withLock { $0.lastRefresh?.addingTimeInterval(-30) ?? now.addingTimeInterval(-retention) }
        let revocations = try await store.revokedSessions(since: since)
        let deletions = try await store.deletedAccounts(since: since)
        state.withLock { state in
            for revocation in revocations { state.revoked[revocation.sessionID] = revocation.revokedAt }
            state.revoked = state.revoked.filter { now.timeIntervalSince($0.value) < retention }
            for deletion in deletions { state.deletedUsers[deletion.userID] = deletion.deletedAt }
            state.deletedUsers = state.deletedUsers.filter { now.timeIntervalSince($0.value) < retention }
            state.lastRefresh = now
        }
    }
}
