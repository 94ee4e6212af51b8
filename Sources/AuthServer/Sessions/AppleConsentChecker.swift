import AccountStore
import AppleSignIn
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Validates users' Apple refresh tokens at Apple (`grant_type=refresh_token`), at most once per configured interval
/// per user, for the background validator and for `POST /auth/refresh`.
///
/// Two guards keep it to one Apple call per user: the store's claim (``AccountStore/claimAppleTokenValidation(userID:validatedBefore:now:)``),
/// which exactly one instance wins, and an in-process single flight, so that racing refreshes on this instance wait
/// for the one call and share its verdict. An in-memory "not due before" per user keeps the refresh path free of
/// store queries between validations.
final class AppleConsentChecker: Sendable {
    /// What a check found.
    enum Verdict: Sendable, Equatable {
        /// Apple confirmed the token.
        case valid
        /// Not due (validated recently here or by another instance), or no Apple token is kept.
        case notDue
        /// Apple answered `invalid_grant`: the user's consent has ended, and so have their sessions.
        case revoked
        /// Apple could not be reached (or the token could not be used); sessions are left alone.
        case unavailable
    }

    let configuration: AccountLifecycleConfiguration
    let store: any AccountStore
    let apple: AppleAPIClient
    let sealer: DataSealer
    /// Ends the user's sessions when Apple says the consent is gone.
    let ending: SessionEnding
    let clock: any WallClock
    let logger: Logger
    /// Per user: no validation is due before this time (known on this instance).
    private let notDueBefore = Mutex<[UserID: Date]>([:])
    private let flights = SingleFlight<UserID, Verdict>()
    /// Bound on ``notDueBefore``; when full, expired entries go, then everything (it is only an optimisation).
    private static let maximumRemembered = 100_000

    init(
        configuration: AccountLifecycleConfiguration,
        store: any AccountStore,
        apple: AppleAPIClient,
        sealer: DataSealer,
        ending: SessionEnding,
        clock: any WallClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.apple = apple
        self.sealer = sealer
        self.ending = ending
        self.clock = clock
        self.logger = logger
    }

    /// Validates the user's token when it is due; racing calls for one user share one validation.
    func checkIfDue(userID: UserID) async -> Verdict {
        let now = clock.now
        if notDueBefore.withLock({ ($0[userID] ?? .distantPast) > now }) { return .notDue }
        return await flights.run(userID) { await self.claimAndValidate(userID: userID) }
    }

    /// Claims the user's validation in the store and, when this instance wins, validates at Apple.
    private func claimAndValidate(userID: UserID) async -> Verdict {
        let now = clock.now
        let claimed: AppleTokenRecord?
        do {
            claimed = try await store.claimAppleTokenValidation(
                userID: userID,
                validatedBefore: now.addingTimeInterval(-configuration.appleValidationInterval),
                now: now
            )
        } catch {
            logger.warning("claiming an Apple token validation failed", metadata: ["error": "\(error)"])
            return .notDue
        }
        guard let claimed else {
            // Validated within the interval (maybe by another instance), or no token: look again a little later
            // rather than on every refresh.
            remember(
                userID,
                notDueBefore: now.addingTimeInterval(min(configuration.appleValidationInterval / 24, 3600))
            )
            return .notDue
        }
        return await validate(claimed, claimedAt: now)
    }

    /// Validates a token whose validation this instance claimed at `claimedAt`.
    private func validate(_ token: AppleTokenRecord, claimedAt: Date) async -> Verdict {
        let refreshToken: String
        do {
            refreshToken = String(decoding: try sealer.open(token.encryptedRefreshToken), as: UTF8.self)
        } catch {
            logger.error(
                "cannot unseal a stored Apple refresh token",
                metadata: ["user": "\(token.userID)", "error": "\(error)"]
            )
            return await couldNotValidate(token.userID, claimedAt: claimedAt, reason: "unseal_failed")
        }
        let validation: RefreshTokenValidation
        do {
            validation = try await apple.validate(refreshToken: refreshToken, clientID: token.clientID)
        } catch {
            return await couldNotValidate(token.userID, claimedAt: claimedAt, reason: "\(error.code)")
        }
        switch validation {
        case .valid:
            remember(token.userID, notDueBefore: claimedAt.addingTimeInterval(configuration.appleValidationInterval))
            logger.debug("Apple refresh token valid", metadata: ["user": "\(token.userID)"])
            return .valid
        case .revoked:
            do {
                // Found by siwa's own check (Apple answered `invalid_grant`): ended by the system.
                let ended = try await ending.endAppleConsent(userID: token.userID, by: .system)
                logger.info(
                    "Apple refresh token revoked: consent ended, sessions ended",
                    metadata: ["user": "\(token.userID)", "sessions": "\(ended.count)"]
                )
            } catch {
                logger.error("ending a revoked Apple consent failed", metadata: ["error": "\(error)"])
            }
            notDueBefore.withLock { _ = $0.removeValue(forKey: token.userID) }
            return .revoked
        }
    }

    /// Apple could not be reached: sessions stay. Retried after the retry delay, or at the next chance when refreshes
    /// are refused meanwhile (the user is then blocked until it succeeds).
    private func couldNotValidate(_ userID: UserID, claimedAt: Date, reason: String) async -> Verdict {
        let interval = configuration.appleValidationInterval
        let retryAt =
            configuration.refuseRefreshWhenAppleUnavailable
            ? claimedAt.addingTimeInterval(-interval - 1)
            : claimedAt.addingTimeInterval(-interval + configuration.appleValidationRetryDelay)
        do {
            try await store.setAppleTokenValidated(userID: userID, at: retryAt)
        } catch {
            logger.warning("rescheduling an Apple token validation failed", metadata: ["error": "\(error)"])
        }
        if !configuration.refuseRefreshWhenAppleUnavailable {
            remember(userID, notDueBefore: claimedAt.addingTimeInterval(configuration.appleValidationRetryDelay))
        }
        logger.warning(
            "could not validate an Apple refresh token; sessions left alone",
            metadata: ["user": "\(userID)", "reason": "\(reason)"]
        )
        return .unavailable
    }

    private func remember(_ userID: UserID, notDueBefore date: Date) {
        let now = clock.now
        notDueBefore.withLock { table in
            if table.count >= Self.maximumRemembered {
                table = table.filter { $0.value > now }
                if table.count >= Self.maximumRemembered { table.removeAll() }
            }
            table[userID] = date
        }
    }

    /// Validates the due tokens in batches (the background job); returns how many validations this pass made.
    @discardableResult
    func validateDueTokens(maximumBatches: Int = 100) async throws -> Int {
        var seen: Set<UserID> = []
        var validated = 0
        for _ in 0..<maximumBatches {
            let now = clock.now
            let due = try await store.appleTokensDue(
                validatedBefore: now.addingTimeInterval(-configuration.appleValidationInterval),
                limit: configuration.appleValidationBatchSize
            )
            let fresh = due.filter { !seen.contains($0.userID) }
            for token in fresh {
                try Task.checkCancellation()
                seen.insert(token.userID)
                let verdict = await flights.run(token.userID) { await self.claimAndValidate(userID: token.userID) }
                if verdict != .notDue { validated += 1 }
            }
            if due.count < configuration.appleValidationBatchSize || fresh.isEmpty { break }
        }
        return validated
    }
}
