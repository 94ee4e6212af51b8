import AccountStore
import AppleSignIn
import HTTPTypes
import Logging

/// What an admin does to an account, for the admin API and the console's forms alike: each action checks what it
/// must, changes the store, and makes this instance refuse ended sessions at once.
struct AdminActions: Sendable {
    let store: any AccountStore
    let sessions: SessionService
    let deletions: AccountDeletionService
    let clock: any WallClock
    let logger: Logger

    /// Disables and enables accounts, recording the admin in the audit log.
    var status: AccountStatusService { AccountStatusService(store: store, clock: clock, logger: logger) }

    /// Ends the user's session `sessionID`, or all of them; returns those ended (recorded as ended by the admin).
    func endSessions(
        of user: UserRecord,
        only sessionID: SessionID?,
        by admin: AdminAccess.Admin
    ) async throws
        -> [SessionID]
    {
        guard let sessionID else {
            return try await sessions.endAllSessions(userID: user.id, by: .admin(admin.subject), reason: "admin")
        }
        let theirs = try await store.sessions(userID: user.id, now: clock.now, limit: AdminAPIController.maximumLimit)
        guard theirs.contains(where: { $0.id == sessionID }) else {
            throw AuthServerError(.notFound, AuthServerError.Code.notFound, "the user has no session \(sessionID)")
        }
        try await sessions.ending.end(sessionID, userID: user.id, by: .admin(admin.subject), reason: "admin")
        return [sessionID]
    }

    func disable(_ user: UserRecord, by admin: AdminAccess.Admin) async throws -> UserRecord {
        guard user.id != admin.user.id else {
            throw AdminAPIController.invalid("id", "is your own account: another admin must disable it")
        }
        guard let disabled = try await status.disable(user.id, by: .admin(admin.subject)) else {
            throw AdminAPIController.noSuchUser
        }
        sessions.ending.recordEnded(disabled.endedSessions, userID: user.id)
        logger.info("account disabled by an admin", metadata: ["user": "\(user.id)", "admin": "\(admin.user.id)"])
        return disabled.user
    }

    func enable(_ user: UserRecord, by admin: AdminAccess.Admin) async throws -> UserRecord {
        guard let enabled = try await status.enable(user.id, by: .admin(admin.subject)) else {
            throw AdminAPIController.noSuchUser
        }
        sessions.ending.recordEnded([], userID: user.id)
        logger.info("account enabled by an admin", metadata: ["user": "\(user.id)", "admin": "\(admin.user.id)"])
        return enabled
    }

    func delete(_ user: UserRecord, by admin: AdminAccess.Admin) async throws -> AccountDeletionService.Deletion {
        guard user.id != admin.user.id else {
            throw AdminAPIController.invalid(
                "id",
                "is your own account: delete it with DELETE /api/me, or ask another admin"
            )
        }
        guard let deletion = try await deletions.deleteAccount(user.id, by: .admin(admin.subject)) else {
            throw AdminAPIController.noSuchUser
        }
        sessions.forgetDeletedAccount(user.id, endedSessions: deletion.endedSessions)
        logger.info("account deleted by an admin", metadata: ["user": "\(user.id)", "admin": "\(admin.user.id)"])
        return deletion
    }
}
