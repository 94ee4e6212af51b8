public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A siwa account.
public struct UserRecord: Sendable, Hashable {
    public var id: UserID
    /// Apple's `sub` for this user (unique).
    public var appleUserID: AppleUserID
    /// The client id the user last signed in through.
    public var clientID: ClientID
    public var email: String?
    public var emailVerified: Bool
    public var isPrivateEmail: Bool
    /// `false` after Apple's `email-disabled` notification for a relay address.
    public var emailForwarding: Bool
    /// From the first sign-in only (Apple never sends the name again); never blanked afterwards.
    public var givenName: String?
    public var familyName: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// Set when Apple ended the user's consent (notification or failed validation); cleared by the next sign-in.
    public var appleConsentRevokedAt: Date?
    /// Set when an operator disabled the account (`siwa users disable`): it cannot sign in or refresh until enabled.
    public var disabledAt: Date?
    /// When the user last signed in (see ``lastSignInResolution``); `nil` for none since this was recorded (schema
    /// version 5 fills it from the newest session for older accounts).
    public var lastSignInAt: Date?

    /// How precisely ``lastSignInAt`` follows sign-ins: a sign-in less than this after the recorded one writes
    /// nothing, so that a user signing in on many devices at once does not queue on the account's row.
    public static let lastSignInResolution: TimeInterval = 60

    /// What the Apple user id of an anonymised account starts with (its own id follows).
    public static let anonymisedPrefix = "anonymised:"

    /// Whether an operator disabled the account.
    public var isDisabled: Bool { disabledAt != nil }

    /// The account's state, as the console shows it.
    public var status: UserStatus {
        if appleUserID.rawValue.hasPrefix(Self.anonymisedPrefix) { return .deleted }
        if disabledAt != nil { return .disabled }
        if appleConsentRevokedAt != nil { return .consentRevoked }
        return .active
    }

    public init(
        id: UserID,
        appleUserID: AppleUserID,
        clientID: ClientID,
        email: String?,
        emailVerified: Bool,
        isPrivateEmail: Bool,
        emailForwarding: Bool = true,
        givenName: String?,
        familyName: String?,
        createdAt: Date,
        updatedAt: Date,
        appleConsentRevokedAt: Date? = nil,
        disabledAt: Date? = nil,
        lastSignInAt: Date? = nil
    ) {
        self.id = id
        self.appleUserID = appleUserID
        self.clientID = clientID
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.emailForwarding = emailForwarding
        self.givenName = givenName
        self.familyName = familyName
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.appleConsentRevokedAt = appleConsentRevokedAt
        self.disabledAt = disabledAt
        self.lastSignInAt = lastSignInAt
    }
}

/// An account's state, from ``UserRecord/status``.
public enum UserStatus: String, Sendable, Hashable, CaseIterable {
    case active
    /// An operator or admin disabled it.
    case disabled
    /// Apple ended the user's consent; the next Apple sign-in makes it active again.
    case consentRevoked = "consent_revoked"
    /// Deleted by anonymising: the row stays without email, names or Apple user id.
    case deleted
}

/// What a verified Apple sign-in tells the store.
public struct AppleSignInFacts: Sendable, Hashable {
    public var appleUserID: AppleUserID
    public var clientID: ClientID
    /// From the token; `nil` when the token carries none (it then leaves the stored email alone).
    public var email: String?
    public var emailVerified: Bool?
    public var isPrivateEmail: Bool?
    /// From the app (native) or the `user` field (web), first sign-in only.
    public var givenName: String?
    public var familyName: String?
    /// The token's `transfer_sub` (for 60 days after a team transfer): when no account has `appleUserID`, the account
    /// whose pending transfer has this `transfer_sub` is moved to `appleUserID`.
    public var transferSub: AppleUserID?
    /// Link to an existing account by email (off by default): when no account has `appleUserID`, the oldest account
    /// whose verified, non-relay email equals this token's verified, non-relay email (ignoring case) is moved to
    /// `appleUserID`. Never for a relay address or an unverified email, on either side.
    public var linkByEmail: Bool

    public init(
        appleUserID: AppleUserID,
        clientID: ClientID,
        email: String? = nil,
        emailVerified: Bool? = nil,
        isPrivateEmail: Bool? = nil,
        givenName: String? = nil,
        familyName: String? = nil,
        transferSub: AppleUserID? = nil,
        linkByEmail: Bool = false
    ) {
        self.appleUserID = appleUserID
        self.clientID = clientID
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.givenName = givenName
        self.familyName = familyName
        self.transferSub = transferSub
        self.linkByEmail = linkByEmail
    }

    /// The email to link by, when linking applies to this sign-in.
    public var linkableEmail: String? {
        guard linkByEmail, let email, !email.isEmpty, emailVerified == true, isPrivateEmail != true,
            !PrivateRelayEmail.isPrivateRelay(email: email, claim: nil)
        else { return nil }
        return email
    }
}

/// The result of ``AccountStore/signIn(_:now:)``.
public struct SignInOutcome: Sendable, Hashable {
    public var user: UserRecord
    /// Whether this sign-in created the account.
    public var isNewUser: Bool
    /// Whether this sign-in finished a team transfer: the token's `transfer_sub` moved the account to its new `sub`
    /// (the store then records ``AuditEventType/transferCompleted`` with reason `sign_in`).
    public var completedTransfer: Bool
    /// Whether the session's ``NewSession/bound`` had been reached: the store started no session (and moved no
    /// last sign-in), and the caller refuses the sign-in.
    public var sessionBoundReached: Bool
    /// The session the sign-in started when the store took its id from ``NewSession/bound`` (which may differ from
    /// ``NewSession/sessionID``); `nil` when it started the session as given, or none.
    public var boundSessionID: SessionID?

    /// - Parameters:
    ///   - user: The account after the sign-in.
    ///   - isNewUser: Whether the sign-in created it.
    ///   - completedTransfer: Whether it finished a team transfer.
    ///   - sessionBoundReached: Whether the session's bound had been reached, so that no session started.
    ///   - boundSessionID: The session started under an id of the bound, when the store chose it.
    public init(
        user: UserRecord,
        isNewUser: Bool,
        completedTransfer: Bool = false,
        sessionBoundReached: Bool = false,
        boundSessionID: SessionID? = nil
    ) {
        self.user = user
        self.isNewUser = isNewUser
        self.completedTransfer = completedTransfer
        self.sessionBoundReached = sessionBoundReached
        self.boundSessionID = boundSessionID
    }
}
