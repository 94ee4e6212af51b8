public import AccountStore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Tests' shorthands for the changes whose lifecycle events name who made them and why: a test that is not about the
/// events makes them as an operator (a session's ending with the reason `test`).
extension AccountStore {
    /// Deletes the account as an operator does.
    /// - Parameters:
    ///   - id: the account.
    ///   - mode: delete or anonymise.
    ///   - appleRevocationDueAt: when the queued revocation of its Apple token is first due (`nil`: none queued).
    ///   - now: the deletion's time.
    /// - Returns: what was deleted, or `nil` for no such account.
    /// - Throws: what the store throws.
    @discardableResult
    public func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        now: Date
    ) async throws(StoreError) -> DeletedAccount? {
        try await deleteUser(id: id, mode: mode, appleRevocationDueAt: appleRevocationDueAt, by: .operator, now: now)
    }

    /// Ends the user's Apple consent as siwa's own check does.
    /// - Parameters:
    ///   - userID: the account.
    ///   - now: the time.
    /// - Returns: the sessions ended.
    /// - Throws: what the store throws.
    @discardableResult
    public func endAppleConsent(userID: UserID, now: Date) async throws(StoreError) -> [SessionID] {
        try await endAppleConsent(userID: userID, by: .system, now: now)
    }

    /// Disables the account as an operator does.
    /// - Parameters:
    ///   - id: the account.
    ///   - now: the time.
    /// - Returns: the account disabled and its sessions ended, or `nil` for no such account.
    /// - Throws: what the store throws.
    @discardableResult
    public func disableUser(id: UserID, now: Date) async throws(StoreError) -> DisabledAccount? {
        try await disableUser(id: id, by: .operator, now: now)
    }

    /// Enables the account as an operator does.
    /// - Parameters:
    ///   - id: the account.
    ///   - now: the time.
    /// - Returns: the account, or `nil` for no such account.
    /// - Throws: what the store throws.
    @discardableResult
    public func enableUser(id: UserID, now: Date) async throws(StoreError) -> UserRecord? {
        try await enableUser(id: id, by: .operator, now: now)
    }

    /// Ends one session as an operator does, for the reason `test`.
    /// - Parameters:
    ///   - sessionID: the session.
    ///   - now: the time.
    /// - Returns: whether it was active.
    /// - Throws: what the store throws.
    @discardableResult
    public func revokeSession(_ sessionID: SessionID, now: Date) async throws(StoreError) -> Bool {
        try await revokeSession(sessionID, by: .operator, reason: "test", now: now)
    }

    /// Ends every session of the user as an operator does, for the reason `test`.
    /// - Parameters:
    ///   - userID: the account.
    ///   - now: the time.
    /// - Returns: the sessions ended.
    /// - Throws: what the store throws.
    @discardableResult
    public func revokeSessions(userID: UserID, now: Date) async throws(StoreError) -> [SessionID] {
        try await revokeSessions(userID: userID, by: .operator, reason: "test", now: now)
    }
}
