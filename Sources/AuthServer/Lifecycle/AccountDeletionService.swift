public import AccountStore
public import AppleSignIn
public import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Deletes accounts and revokes their Apple refresh tokens at Apple (App Store guideline 5.1.1(v)). Used by
/// `DELETE /api/me`, `siwa users delete` and the revocation worker.
///
/// The deletion and the queueing of the revocation are one store transaction; the revocation is then tried at once,
/// and confirmed: Apple answers 200 to any revocation, so a refresh grant with the token must then fail.
/// When Apple cannot be reached it stays queued and ``AppleRevocationWorker`` retries it with exponential backoff,
/// also after a restart.
public struct AccountDeletionService: Sendable {
    /// What happened to the account's Apple token.
    public enum AppleRevocation: Sendable, Equatable {
        /// Revoked, and confirmed: a refresh grant with the token then answered `invalid_grant`.
        case revoked
        /// Apple could not be reached, refused, or answered 200 while the token still refreshes: queued, next attempt
        /// at `retryAt`.
        case queued(retryAt: Date, reason: String)
        /// No Apple token was kept for the account.
        case noAppleToken
    }

    /// A completed deletion.
    public struct Deletion: Sendable {
        public var user: UserRecord
        public var mode: AccountDeletionMode
        public var endedSessions: [SessionID]
        public var appleRevocation: AppleRevocation
    }

    let configuration: AccountLifecycleConfiguration
    let store: any AccountStore
    let apple: AppleAPIClient?
    let sealer: DataSealer
    let clock: any WallClock
    let logger: Logger
    let audit: AuditLog

    /// - Parameters:
    ///   - configuration: deletion mode and revocation backoff.
    ///   - store: accounts and the revocation queue.
    ///   - apple: the client that revokes at Apple; `nil` (no credentials) queues every revocation.
    ///   - sealer: opens the sealed Apple refresh tokens.
    ///   - clock: wall clock.
    ///   - logger: events; never tokens.
    public init(
        configuration: AccountLifecycleConfiguration,
        store: any AccountStore,
        apple: AppleAPIClient?,
        sealer: DataSealer,
        clock: any WallClock,
        logger: Logger
    ) {
        self.init(
            configuration: configuration,
            store: store,
            apple: apple,
            sealer: sealer,
            clock: clock,
            logger: logger,
            audit: AuditLog(store: store, clock: clock, logger: logger)
        )
    }

    /// The server's: its one ``AuditLog``, which counts failed writes in the metrics.
    init(
        configuration: AccountLifecycleConfiguration,
        store: any AccountStore,
        apple: AppleAPIClient?,
        sealer: DataSealer,
        clock: any WallClock,
        logger: Logger,
        audit: AuditLog
    ) {
        self.configuration = configuration
        self.store = store
        self.apple = apple
        self.sealer = sealer
        self.clock = clock
        self.logger = logger
        self.audit = audit
    }

    /// Deletes (or anonymises, per configuration) the account, queues its Apple token's revocation in the same
    /// transaction, then tries the revocation at once. The audit log records the deletion and each session ended, by
    /// `actor` (the user for `DELETE /api/me`, an operator at the command line by default), and the revocation.
    /// - Returns: `nil` when there is no such account.
    /// - Throws: ``StoreError`` when the store fails (nothing is deleted then).
    public func deleteAccount(_ userID: UserID, by actor: AuditActor = .operator) async throws -> Deletion? {
        guard
            let deleted = try await store.deleteUser(
                id: userID,
                mode: configuration.deletionMode,
                // Due a little later: the attempt below goes first, and the retry worker must not race it.
                appleRevocationDueAt: clock.now.addingTimeInterval(max(60, configuration.revocationRetryDelay)),
                by: actor,
                now: clock.now
            )
        else { return nil }
        await audit.append(
            .accountDeleted,
            userID: userID,
            actor: actor,
            details: ["mode": configuration.deletionMode.rawValue]
        )
        await SessionEnding.audit(
            ended: deleted.endedSessions,
            userID: userID,
            by: actor,
            reason: "account_deleted",
            in: audit
        )
        let revocation: AppleRevocation
        if let pending = deleted.queuedRevocation {
            revocation = await attempt(pending)
        } else {
            revocation = .noAppleToken
        }
        logger.info(
            "account deleted",
            metadata: [
                "user": "\(userID)", "mode": "\(configuration.deletionMode.rawValue)",
                "sessions": "\(deleted.endedSessions.count)", "apple_revocation": "\(revocation.summary)",
            ]
        )
        return Deletion(
            user: deleted.user,
            mode: configuration.deletionMode,
            endedSessions: deleted.endedSessions,
            appleRevocation: revocation
        )
    }

    /// Tries one queued revocation at Apple: on success it leaves the queue; on failure it is postponed by the
    /// retry delay doubled per earlier failure (capped).
    public func attempt(_ pending: PendingAppleRevocation) async -> AppleRevocation {
        let failure: String
        // The audit log's reason: a short code, never Apple's text.
        let failureCode: String
        if let apple {
            do {
                let token = String(decoding: try sealer.open(pending.encryptedRefreshToken), as: UTF8.self)
                do {
                    try await apple.revoke(token: token, hint: .refreshToken, clientID: pending.clientID)
                    // Apple answers 200 to any revocation, one that revoked nothing included: only a refresh grant
                    // that the token now fails shows that it is gone.
                    switch try await apple.validate(refreshToken: token, clientID: pending.clientID) {
                    case .revoked:
                        do {
                            try await store.finishAppleRevocation(id: pending.id)
                        } catch {
                            logger.warning("removing a done revocation failed", metadata: ["error": "\(error)"])
                        }
                        await audit.append(
                            .appleRevocationConfirmed,
                            userID: pending.userID,
                            actor: .system,
                            clientID: pending.clientID
                        )
                        return .revoked
                    case .valid:
                        failure = "Apple answered the revocation with 200, but the token still refreshes"
                        failureCode = "revocation_unconfirmed"
                    }
                } catch {
                    failure = "\(error.code): \(error.reason)"
                    failureCode = AuthServerError.snakeCase(error.code.description)
                }
            } catch {
                failure = "the sealed token cannot be opened: \(error)"
                failureCode = "unseal_failed"
            }
        } else {
            failure = "no Apple credentials are configured"
            failureCode = "no_apple_credentials"
        }
        let retryAt = clock.now.addingTimeInterval(
            configuration.revocationBackoff(afterFailedAttempts: pending.attempts)
        )
        do {
            try await store.postponeAppleRevocation(id: pending.id, until: retryAt, error: String(failure.prefix(500)))
        } catch {
            logger.warning("postponing a revocation failed", metadata: ["error": "\(error)"])
        }
        logger.warning(
            "revoking an Apple token failed; queued for retry",
            metadata: [
                "user": "\(pending.userID)", "attempts": "\(pending.attempts + 1)", "reason": "\(failure)",
                "retry_at": "\(retryAt)",
            ]
        )
        await audit.append(
            .appleRevocationQueued,
            userID: pending.userID,
            actor: .system,
            clientID: pending.clientID,
            reason: failureCode,
            details: ["attempts": "\(pending.attempts + 1)"]
        )
        return .queued(retryAt: retryAt, reason: failure)
    }

    /// Tries every due revocation, oldest first, in batches; returns how many Apple confirmed.
    @discardableResult
    public func retryDueRevocations(batchSize: Int = 50) async throws -> Int {
        var revoked = 0
        var seen: Set<UUID> = []
        while true {
            let due = try await store.dueAppleRevocations(now: clock.now, limit: batchSize).filter {
                !seen.contains($0.id)
            }
            if due.isEmpty { return revoked }
            for pending in due {
                try Task.checkCancellation()
                seen.insert(pending.id)
                if await attempt(pending) == .revoked { revoked += 1 }
            }
        }
    }
}

extension AccountDeletionService.AppleRevocation {
    /// For logs and the CLI: `revoked`, `queued` or `no_apple_token`.
    public var summary: String {
        switch self {
        case .revoked: "revoked"
        case .queued: "queued"
        case .noAppleToken: "no_apple_token"
        }
    }
}
