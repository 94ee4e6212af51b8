import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A change to a shared store, announced to every instance as the transaction that made it commits, so that each one
/// honours it at once instead of at its next poll: an ending (a session, an account) is refused everywhere within
/// moments. Announcements carry ids and times only, never a token or a hash.
public enum StoreAnnouncement: Sendable, Hashable {
    /// A session was ended (logout, reuse, a disabled or deleted account, Apple's revoked consent, an admin).
    case sessionEnded(SessionID, at: Date)
    /// An account was deleted or anonymised: every access token of it is refused.
    case accountDeleted(UserID, at: Date)
    /// An account's stored data changed (status, e-mail, name, Apple's consent): cached copies are stale.
    case accountChanged(UserID)
    /// A signing key was added or retired.
    case signingKeysChanged
    /// Announcements may have been missed (the listening connection was lost and is back, or was just opened):
    /// everything must be read again.
    case resynchronize
}

extension AccountStore {
    /// No announcements: a store used by one process (in memory, SQLite), whose changes its own process already knows,
    /// or one that cannot announce; callers poll.
    public func announcements() -> AsyncStream<StoreAnnouncement>? { nil }
}
