public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What an account deletion does with the account's data.
public enum AccountDeletionMode: String, Sendable, Hashable {
    /// The account row and everything of it are deleted.
    case delete
    /// The account row stays with its email, names and Apple user id removed; sessions and the Apple token go.
    case anonymise
}

/// A deleted (or anonymised) account, for the revocation lists and user caches of every instance.
public struct AccountDeletion: Sendable, Hashable {
    public var userID: UserID
    public var deletedAt: Date

    public init(userID: UserID, deletedAt: Date) {
        self.userID = userID
        self.deletedAt = deletedAt
    }
}

/// An Apple refresh token waiting to be revoked at Apple (its account is gone); retried until Apple confirms.
public struct PendingAppleRevocation: Sendable, Hashable {
    public var id: UUID
    /// The account it belonged to (already deleted).
    public var userID: UserID
    public var clientID: ClientID
    /// The sealed refresh token, as it was kept in ``AppleTokenRecord``.
    public var encryptedRefreshToken: [UInt8]
    public var createdAt: Date
    public var attempts: Int
    public var nextAttemptAt: Date
    /// Why the last attempt failed (never the token).
    public var lastError: String?

    public init(
        id: UUID = UUID(),
        userID: UserID,
        clientID: ClientID,
        encryptedRefreshToken: [UInt8],
        createdAt: Date,
        attempts: Int = 0,
        nextAttemptAt: Date,
        lastError: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.clientID = clientID
        self.encryptedRefreshToken = encryptedRefreshToken
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
    }
}

/// The result of ``AccountStore/deleteUser(id:mode:appleRevocationDueAt:now:)``.
public struct DeletedAccount: Sendable, Hashable {
    public var user: UserRecord
    /// Sessions that were active and ended with the account.
    public var endedSessions: [SessionID]
    /// The Apple token's revocation, queued in the same transaction, when there was a token and it was asked for.
    public var queuedRevocation: PendingAppleRevocation?

    public init(user: UserRecord, endedSessions: [SessionID], queuedRevocation: PendingAppleRevocation?) {
        self.user = user
        self.endedSessions = endedSessions
        self.queuedRevocation = queuedRevocation
    }
}

/// The result of ``AccountStore/disableUser(id:now:)``.
public struct DisabledAccount: Sendable, Hashable {
    /// The account, disabled.
    public var user: UserRecord
    /// Sessions that were active and ended with the disabling.
    public var endedSessions: [SessionID]

    public init(user: UserRecord, endedSessions: [SessionID]) {
        self.user = user
        self.endedSessions = endedSessions
    }
}

/// What a verified Apple server-to-server notification does to the account it names.
public enum AppleNotificationAction: Sendable, Hashable {
    /// `consent-revoked`: every session ends, the Apple token is dropped and the link is marked revoked.
    case endConsent
    /// `account-delete`: the account goes (Apple already deleted the Apple ID, so nothing is revoked at Apple).
    case deleteAccount(AccountDeletionMode)
    /// `email-disabled` (`false`) / `email-enabled` (`true`).
    case setEmailForwarding(Bool)
    /// A type siwa does not act on: only logged.
    case none
}

/// One Apple notification in the audit log.
public struct AppleNotificationRecord: Sendable, Hashable {
    /// The types that set email forwarding, whose order matters (``AccountStore/applyAppleNotification(_:action:now:)``).
    public static let emailEventTypes: Set<String> = ["email-enabled", "email-disabled"]
    /// How much older than the latest sign-in a `consent-revoked` must be to count as stale: Apple's clock and this
    /// server's may differ by this much, and a revocation just after a sign-in must still apply.
    public static let consentOrderingLeeway: TimeInterval = 60
    /// What the log holds instead of the Apple user id once the account is deleted or anonymised.
    public static let forgottenAppleUserID = AppleUserID("forgotten")

    /// Identifies the event across deliveries (Apple retries): a digest of its type, user and event time.
    public var eventKey: String
    /// Apple's event type, e.g. `consent-revoked`.
    public var type: String
    public var appleUserID: AppleUserID
    /// The siwa account it applied to, if one existed.
    public var userID: UserID?
    /// When the event happened at Apple.
    public var eventTime: Date
    /// When siwa first received it.
    public var receivedAt: Date
    /// What it did: `applied`, `unknown_user` or `ignored`.
    public var outcome: String

    public init(
        eventKey: String,
        type: String,
        appleUserID: AppleUserID,
        userID: UserID?,
        eventTime: Date,
        receivedAt: Date,
        outcome: String
    ) {
        self.eventKey = eventKey
        self.type = type
        self.appleUserID = appleUserID
        self.userID = userID
        self.eventTime = eventTime
        self.receivedAt = receivedAt
        self.outcome = outcome
    }
}

/// The result of ``AccountStore/applyAppleNotification(_:action:now:)``.
public enum AppleNotificationOutcome: Sendable, Hashable {
    /// First delivery: the action was applied (or there was nothing to apply) and the event logged.
    case applied(AppleNotificationRecord, endedSessions: [SessionID], deletedUser: UserID?)
    /// The event was delivered before: nothing changed.
    case duplicate(AppleNotificationRecord)
}

/// How many rows ``AccountStore/purgeExpired(now:retention:)`` removed.
public struct PurgeResult: Sendable, Hashable {
    public var serverNonces: Int
    public var webFlowStates: Int
    public var refreshTokens: Int
    public var sessions: Int
    public var accountDeletions: Int
    /// OpenID Connect authorization codes past `retention` after their expiry (kept that long so that a late replay
    /// still ends what the code issued).
    public var authorizationCodes: Int

    public init(
        serverNonces: Int,
        webFlowStates: Int,
        refreshTokens: Int,
        sessions: Int,
        accountDeletions: Int,
        authorizationCodes: Int = 0
    ) {
        self.serverNonces = serverNonces
        self.webFlowStates = webFlowStates
        self.refreshTokens = refreshTokens
        self.sessions = sessions
        self.accountDeletions = accountDeletions
        self.authorizationCodes = authorizationCodes
    }

    public var total: Int {
        serverNonces + webFlowStates + refreshTokens + sessions + accountDeletions + authorizationCodes
    }
}
