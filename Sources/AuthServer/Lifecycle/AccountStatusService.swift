public import AccountStore
public import AppleSignIn
public import Logging

/// Disables and enables accounts (`siwa users disable` / `siwa users enable`).
///
/// Disabling marks the account and ends every session in one store transaction; running servers learn of it at their
/// next store refresh (every few seconds): the revocation list then refuses the sessions' access tokens and the user
/// cache drops the account. Sign-ins and refreshes of a disabled account answer 403 `account_disabled`.
public struct AccountStatusService: Sendable {
    let store: any AccountStore
    let clock: any WallClock
    let logger: Logger
    let audit: AuditLog

    /// - Parameters:
    ///   - store: the accounts.
    ///   - clock: wall clock.
    ///   - logger: events.
    public init(store: any AccountStore, clock: any WallClock, logger: Logger) {
        self.init(
            store: store,
            clock: clock,
            logger: logger,
            audit: AuditLog(store: store, clock: clock, logger: logger)
        )
    }

    /// The server's: its one ``AuditLog``, which counts failed writes in the metrics.
    init(store: any AccountStore, clock: any WallClock, logger: Logger, audit: AuditLog) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.audit = audit
    }

    /// Disables the account and ends its sessions; `nil` when there is no such account. The audit log records the
    /// disabling and each session ended, by `actor` (an operator at the command line by default).
    public func disable(_ userID: UserID, by actor: AuditActor = .operator) async throws -> DisabledAccount? {
        guard let disabled = try await store.disableUser(id: userID, by: actor, now: clock.now) else { return nil }
        await audit.append(.accountDisabled, userID: userID, actor: actor)
        await SessionEnding.audit(
            ended: disabled.endedSessions,
            userID: userID,
            by: actor,
            reason: "account_disabled",
            in: audit
        )
        logger.info(
            "account disabled",
            metadata: ["user": "\(userID)", "sessions": "\(disabled.endedSessions.count)"]
        )
        return disabled
    }

    /// Ends one session, as an operator does (`siwa restore --reapply` ending again what a restore brought back):
    /// running servers refuse it at their next store refresh. Returns whether it was active; the audit log records it.
    /// - Parameters:
    ///   - sessionID: the session.
    ///   - userID: its account, when known (for the audit log).
    ///   - actor: who ends it; `reason`: why, a short code.
    public func endSession(
        _ sessionID: SessionID,
        userID: UserID?,
        by actor: AuditActor = .operator,
        reason: String
    ) async throws -> Bool {
        try await SessionEnding.endInStore(sessionID, userID: userID, by: actor, reason: reason, audit: audit)
    }

    /// Enables the account again; `nil` when there is no such account. The audit log records it, by `actor`.
    public func enable(_ userID: UserID, by actor: AuditActor = .operator) async throws -> UserRecord? {
        guard let enabled = try await store.enableUser(id: userID, by: actor, now: clock.now) else { return nil }
        await audit.append(.accountEnabled, userID: userID, actor: actor)
        logger.info("account enabled", metadata: ["user": "\(userID)"])
        return enabled
    }
}
