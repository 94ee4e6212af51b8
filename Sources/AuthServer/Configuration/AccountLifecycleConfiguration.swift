public import AccountStore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Settings of the account lifecycle: Apple's server-to-server notifications, account deletion with revocation at
/// Apple, and the periodic validation of users' Apple refresh tokens.
public struct AccountLifecycleConfiguration: Sendable {
    /// What deleting an account does (`DELETE /api/me`, `siwa users delete`, Apple's `account-delete`): remove it
    /// (default) or anonymise it and keep the row.
    public var deletionMode: AccountDeletionMode
    /// Seconds between two validations of one user's Apple refresh token at Apple (default 24 hours; Apple may
    /// throttle more frequent checks).
    public var appleValidationInterval: TimeInterval
    /// Seconds before a validation that could not reach Apple is tried again (default 10 minutes).
    public var appleValidationRetryDelay: TimeInterval
    /// Refuse `POST /auth/refresh` with 503 `apple_unavailable` when the user's token is overdue and Apple cannot be
    /// reached (default: allow it, and try again later).
    public var refuseRefreshWhenAppleUnavailable: Bool
    /// How many due tokens the background validator takes from the store at a time.
    public var appleValidationBatchSize: Int
    /// How often the background validator looks for due tokens (default 1 minute).
    public var appleValidationPollInterval: Duration
    /// How often queued revocations at Apple are retried when due (default 5 seconds).
    public var revocationPollInterval: Duration
    /// Seconds before the first retry of a failed revocation at Apple; each further failure doubles it.
    public var revocationRetryDelay: TimeInterval
    /// The longest wait between two retries of a revocation (default 1 hour).
    public var revocationMaximumRetryDelay: TimeInterval

    public init(
        deletionMode: AccountDeletionMode = .delete,
        appleValidationInterval: TimeInterval = 86_400,
        appleValidationRetryDelay: TimeInterval = 600,
        refuseRefreshWhenAppleUnavailable: Bool = false,
        appleValidationBatchSize: Int = 50,
        appleValidationPollInterval: Duration = .seconds(60),
        revocationPollInterval: Duration = .seconds(5),
        revocationRetryDelay: TimeInterval = 30,
        revocationMaximumRetryDelay: TimeInterval = 3600
    ) {
        self.deletionMode = deletionMode
        self.appleValidationInterval = appleValidationInterval
        self.appleValidationRetryDelay = appleValidationRetryDelay
        self.refuseRefreshWhenAppleUnavailable = refuseRefreshWhenAppleUnavailable
        self.appleValidationBatchSize = max(1, appleValidationBatchSize)
        self.appleValidationPollInterval = appleValidationPollInterval
        self.revocationPollInterval = revocationPollInterval
        self.revocationRetryDelay = revocationRetryDelay
        self.revocationMaximumRetryDelay = revocationMaximumRetryDelay
    }

    /// The wait before retry number `attempt + 1` of a revocation: the retry delay doubled per earlier failure,
    /// capped at the maximum.
    func revocationBackoff(afterFailedAttempts attempts: Int) -> TimeInterval {
        let doubled = revocationRetryDelay * Double(1 << min(max(0, attempts), 30))
        return min(doubled, revocationMaximumRetryDelay)
    }
}
