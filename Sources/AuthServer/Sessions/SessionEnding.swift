import AccountStore
import AppleSignIn

/// The one implementation of ending sessions, used by ``SessionService`` and by the Apple consent checker it owns.
///
/// Ending has two halves: the store (so that refresh tokens die on every instance and other instances learn of it at
/// their next store refresh) and this instance's memory (the revocation list refuses the session's access tokens at
/// once, and the user cache forgets the account). Every way a session ends (logout, reuse, consent revoked, account
/// deleted, an Apple notification) goes through ``recordEnded(_:userID:deletedUser:)``, so that no caller can do one
/// half and forget the other.
struct SessionEnding: Sendable {
    let store: any AccountStore
    let revocations: RevocationList
    let users: UserCache
    let clock: any WallClock

    /// Ends one session (the account itself is unchanged, so its cache entry stays). Returns whether it was active.
    @discardableResult
    func end(_ sessionID: SessionID) async throws -> Bool {
        let ended = try await store.revokeSession(sessionID, now: clock.now)
        recordEnded([sessionID], userID: nil)
        return ended
    }

    /// Ends every session of a user; returns those that were active.
    @discardableResult
    func endAll(userID: UserID) async throws -> [SessionID] {
        let ended = try await store.revokeSessions(userID: userID, now: clock.now)
        recordEnded(ended, userID: userID)
        return ended
    }

    /// Apple ended the user's consent: every session ends and the Apple token goes (``AccountStore/endAppleConsent(userID:now:)``).
    @discardableResult
    func endAppleConsent(userID: UserID) async throws -> [SessionID] {
        let ended = try await store.endAppleConsent(userID: userID, now: clock.now)
        recordEnded(ended, userID: userID)
        return ended
    }

    /// The in-memory half, for sessions the store has already ended (a detected reuse, a deletion or a notification
    /// applied in the store's own transaction): their access tokens are refused at once on this instance, and the
    /// account (`userID`, when its record changed) is read again from the store, or refused when deleted.
    func recordEnded(_ sessions: [SessionID], userID: UserID?, deletedUser: UserID? = nil) {
        let now = clock.now
        for sessionID in sessions { revocations.add(sessionID, at: now) }
        if let deletedUser {
            revocations.addDeletedUser(deletedUser, at: now)
            users.invalidate(deletedUser)
        }
        if let userID { users.invalidate(userID) }
    }
}
