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
    /// Records ``AuditEventType/sessionEnded`` for every session actually ended.
    let audit: AuditLog

    /// Ends one session (the account itself is unchanged, so its cache entry stays). Returns whether it was active.
    /// - Parameters:
    ///   - userID: its account, when known (for the audit log).
    ///   - actor: who ended it; `reason`: why (a short code such as `logout` or `reuse`).
    @discardableResult
    func end(_ sessionID: SessionID, userID: UserID?, by actor: AuditActor, reason: String) async throws -> Bool {
        let ended = try await store.revokeSession(sessionID, by: actor, reason: reason, now: clock.now)
        recordEnded([sessionID], userID: nil)
        if ended { await Self.audit(ended: [sessionID], userID: userID, by: actor, reason: reason, in: audit) }
        return ended
    }

    /// Ends every session of a user; returns those that were active.
    @discardableResult
    func endAll(userID: UserID, by actor: AuditActor, reason: String) async throws -> [SessionID] {
        let ended = try await store.revokeSessions(userID: userID, by: actor, reason: reason, now: clock.now)
        recordEnded(ended, userID: userID)
        await Self.audit(ended: ended, userID: userID, by: actor, reason: reason, in: audit)
        return ended
    }

    /// Apple ended the user's consent: every session ends and the Apple token goes (``AccountStore/endAppleConsent(userID:now:)``).
    @discardableResult
    func endAppleConsent(userID: UserID, by actor: AuditActor) async throws -> [SessionID] {
        let ended = try await store.endAppleConsent(userID: userID, by: actor, now: clock.now)
        recordEnded(ended, userID: userID)
        await Self.audit(ended: ended, userID: userID, by: actor, reason: "apple_consent_revoked", in: audit)
        return ended
    }

    /// Both halves' record for sessions the store has already ended in its own transaction (a deletion, a
    /// notification applied): the memory half (``recordEnded(_:userID:deletedUser:)``) and the audit log.
    func storeEnded(
        _ sessions: [SessionID],
        userID: UserID?,
        deletedUser: UserID? = nil,
        by actor: AuditActor,
        reason: String
    ) async {
        recordEnded(sessions, userID: userID, deletedUser: deletedUser)
        await Self.audit(ended: sessions, userID: userID ?? deletedUser, by: actor, reason: reason, in: audit)
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

    /// Records ``AuditEventType/sessionEnded`` once per session in `ended`. The one place it is recorded: also for
    /// services with no server memory to update (`siwa users disable` ends sessions in the store's transaction).
    /// Ends one session in the store alone, for a process without a server's memory (an operator command): running
    /// servers refuse it at their next store refresh, or as PostgreSQL announces it. Records
    /// ``AuditEventType/sessionEnded`` when it was active, and returns whether it was.
    static func endInStore(
        _ sessionID: SessionID,
        userID: UserID?,
        by actor: AuditActor,
        reason: String,
        audit: AuditLog
    ) async throws -> Bool {
        let ended = try await audit.store.revokeSession(sessionID, by: actor, reason: reason, now: audit.clock.now)
        if ended { await Self.audit(ended: [sessionID], userID: userID, by: actor, reason: reason, in: audit) }
        return ended
    }

    static func audit(
        ended: [SessionID],
        userID: UserID?,
        by actor: AuditActor,
        reason: String,
        in audit: AuditLog
    ) async {
        for sessionID in ended {
            await audit.append(.sessionEnded, userID: userID, actor: actor, reason: reason, sessionID: sessionID)
        }
    }
}
