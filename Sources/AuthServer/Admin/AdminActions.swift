import AccountStore
import AppleSignIn
import HTTPTypes
import Logging

/// What an admin does to an account, for the admin API and the console's forms alike: each action checks what it
/// must, changes the store, and makes this instance refuse ended sessions at once.
struct AdminActions: Sendable {
    let access: AdminAccess
    let store: any AccountStore
    let sessions: SessionService
    let deletions: AccountDeletionService
    let clock: any WallClock
    let logger: Logger

    /// Disables and enables accounts, recording the admin in the audit log.
    var status: AccountStatusService {
        AccountStatusService(store: store, clock: clock, logger: logger, audit: sessions.audit)
    }

    /// The server's one audit log, for the actions recorded here.
    var audit: AuditLog { sessions.audit }

    /// Ends the user's session `sessionID`, or all of them; returns those ended (recorded as ended by the admin).
    func endSessions(
        of user: UserRecord,
        only sessionID: SessionID?,
        by caller: AdminAccess.Caller
    ) async throws
        -> [SessionID]
    {
        try await requireMayActOn(user, by: caller)
        guard let sessionID else {
            return try await sessions.endAllSessions(userID: user.id, by: caller.actor, reason: "admin")
        }
        let theirs = try await store.sessions(userID: user.id, now: clock.now, limit: RequestFields.maximumLimit)
        guard theirs.contains(where: { $0.id == sessionID }) else {
            throw AuthServerError(.notFound, AuthServerError.Code.notFound, "the user has no session \(sessionID)")
        }
        try await sessions.endSession(sessionID, userID: user.id, by: caller.actor, reason: "admin")
        return [sessionID]
    }

    func disable(_ user: UserRecord, by caller: AdminAccess.Caller) async throws -> UserRecord {
        guard user.id != caller.userID else {
            throw RequestFields.invalid("id", "is your own account: another admin must disable it")
        }
        try await requireMayActOn(user, by: caller)
        guard let disabled = try await status.disable(user.id, by: caller.actor) else {
            throw AdminAPIController.noSuchUser
        }
        await sessions.noteEnded(disabled.endedSessions, userID: user.id)
        logger.info("account disabled by an admin", metadata: ["user": "\(user.id)", "by": "\(caller.logName)"])
        return disabled.user
    }

    func enable(_ user: UserRecord, by caller: AdminAccess.Caller) async throws -> UserRecord {
        guard let enabled = try await status.enable(user.id, by: caller.actor) else {
            throw AdminAPIController.noSuchUser
        }
        await sessions.noteEnded([], userID: user.id)
        logger.info("account enabled by an admin", metadata: ["user": "\(user.id)", "by": "\(caller.logName)"])
        return enabled
    }

    func delete(_ user: UserRecord, by caller: AdminAccess.Caller) async throws -> AccountDeletionService.Deletion {
        guard user.id != caller.userID else {
            throw RequestFields.invalid(
                "id",
                "is your own account: delete it with DELETE /api/me, or ask another admin"
            )
        }
        try await requireMayActOn(user, by: caller)
        guard let deletion = try await deletions.deleteAccount(user.id, by: caller.actor) else {
            throw AdminAPIController.noSuchUser
        }
        sessions.forgetDeletedAccount(user.id, endedSessions: deletion.endedSessions)
        logger.info("account deleted by an admin", metadata: ["user": "\(user.id)", "by": "\(caller.logName)"])
        return deletion
    }

    /// Refuses an admin granted the role in the store, or a service token, acting against another admin's account
    /// (ending its sessions, disabling or deleting it): only the admins of the configuration (`SIWA_ADMIN_USERS`) may,
    /// so that a granted admin cannot lock out the operators who granted the role, nor one granted admin another.
    /// - Throws: ``AuthServerError`` 403 `admin_protected`.
    func requireMayActOn(_ user: UserRecord, by caller: AdminAccess.Caller) async throws {
        // A service token acts as a granted admin: it may not touch the admins' accounts either.
        if case .admin(let admin) = caller {
            guard user.id != admin.user.id, !access.isConfigured(admin.subject) else { return }
        }
        guard try await access.role(of: user) != nil else { return }
        throw AuthServerError(
            .forbidden,
            AuthServerError.Code.adminProtected,
            "this account holds the admin role: only an admin listed in SIWA_ADMIN_USERS may end its sessions, "
                + "disable or delete it"
        )
    }
}
