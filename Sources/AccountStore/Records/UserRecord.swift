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

    /// Whether an operator disabled the account.
    public var isDisabled: Bool { disabledAt != nil }

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
        disabledAt: Date? = nil
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
    }
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

    public init(user: UserRecord, isNewUser: Bool) {
        self.user = user
        self.isNewUser = isNewUser
    }
}
