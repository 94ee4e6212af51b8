#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The verified claims of an Apple identity token.
///
/// Only ``IdentityTokenVerifier`` makes these from a token, after every check passed; the memberwise initialiser is
/// for tests and the emulator side of the code.
public struct IdentityToken: Sendable, Hashable {
    /// `iss`: Apple.
    public var iss: String
    /// `sub`: the user's stable id for your team.
    public var sub: AppleUserID
    /// `aud`: the client id the token was issued to (bundle id: native; Services ID: web). The same client id must be
    /// used to exchange this sign-in's authorization code.
    public var aud: ClientID
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `email`, when the user shared one (real or private relay).
    public var email: String?
    /// `email_verified` (Apple sent it as a string in older tokens, a boolean since 2024).
    public var emailVerified: Bool?
    /// `is_private_email`: the address is a private relay address.
    public var isPrivateEmail: Bool?
    /// `real_user_status` (native sign-in only).
    public var realUserStatus: RealUserStatus?
    /// `nonce` as the app sent it to Apple.
    public var nonce: String?
    /// `nonce_supported`.
    public var nonceSupported: Bool?
    /// `auth_time`.
    public var authTime: Date?
    /// `transfer_sub`: the user's id at the team that transferred the app (for 60 days after a transfer).
    public var transferSub: AppleUserID?
    /// `org_id`: the organisation of a managed Apple Account.
    public var orgId: String?
    /// `c_hash` and `at_hash`, as sent.
    public var cHash: String?
    public var atHash: String?

    /// Makes claims from their parts (tests and the emulator side of the code; a token's come from
    /// ``IdentityTokenVerifier/verify(_:expectedNonce:)``).
    /// - Parameters:
    ///   - iss: `iss`, Apple's issuer by default.
    ///   - sub: `sub`.
    ///   - aud: `aud`.
    ///   - issuedAt: `iat`.
    ///   - expiresAt: `exp`.
    ///   - email: `email`.
    ///   - emailVerified: `email_verified`.
    ///   - isPrivateEmail: `is_private_email`.
    ///   - realUserStatus: `real_user_status`.
    ///   - nonce: `nonce`.
    ///   - nonceSupported: `nonce_supported`.
    ///   - authTime: `auth_time`.
    ///   - transferSub: `transfer_sub`.
    ///   - orgId: `org_id`.
    ///   - cHash: `c_hash`.
    ///   - atHash: `at_hash`.
    public init(
        iss: String = AppleSignInConfiguration.appleIssuer,
        sub: AppleUserID,
        aud: ClientID,
        issuedAt: Date,
        expiresAt: Date,
        email: String? = nil,
        emailVerified: Bool? = nil,
        isPrivateEmail: Bool? = nil,
        realUserStatus: RealUserStatus? = nil,
        nonce: String? = nil,
        nonceSupported: Bool? = nil,
        authTime: Date? = nil,
        transferSub: AppleUserID? = nil,
        orgId: String? = nil,
        cHash: String? = nil,
        atHash: String? = nil
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.realUserStatus = realUserStatus
        self.nonce = nonce
        self.nonceSupported = nonceSupported
        self.authTime = authTime
        self.transferSub = transferSub
        self.orgId = orgId
        self.cHash = cHash
        self.atHash = atHash
    }

    /// Whether ``email`` is a private relay address: the `is_private_email` claim decides; the domain is consulted only
    /// when the claim is absent.
    public var emailIsPrivateRelay: Bool {
        guard let email else { return false }
        return PrivateRelayEmail.isPrivateRelay(email: email, claim: isPrivateEmail)
    }
}
