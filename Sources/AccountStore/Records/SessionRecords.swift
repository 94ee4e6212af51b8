public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A refresh token as the store keeps it: only its SHA-256 hash.
public struct RefreshTokenRecord: Sendable, Hashable {
    /// SHA-256 of the token (32 bytes). The token itself is never stored.
    public var hash: [UInt8]
    public var sessionID: SessionID
    public var userID: UserID
    public var issuedAt: Date
    public var expiresAt: Date

    public init(hash: [UInt8], sessionID: SessionID, userID: UserID, issuedAt: Date, expiresAt: Date) {
        self.hash = hash
        self.sessionID = sessionID
        self.userID = userID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// A session to start together with a sign-in (``AccountStore/signIn(_:startingSession:now:)``): its first refresh
/// token, stored as a hash, belongs to whichever account the sign-in finds or creates.
public struct NewSession: Sendable, Hashable {
    public var sessionID: SessionID
    /// SHA-256 of the first refresh token.
    public var refreshTokenHash: [UInt8]
    public var issuedAt: Date
    public var expiresAt: Date

    public init(sessionID: SessionID, refreshTokenHash: [UInt8], issuedAt: Date, expiresAt: Date) {
        self.sessionID = sessionID
        self.refreshTokenHash = refreshTokenHash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// The outcome of presenting a refresh token.
public enum RotationOutcome: Sendable, Hashable {
    /// The token was current: it is now used up and `next` is the session's current token.
    case rotated(sessionID: SessionID, userID: UserID)
    /// The token had already been rotated: treated as theft, the whole session is now revoked.
    case reused(sessionID: SessionID, userID: UserID)
    /// The token's session was revoked (logout, consent revoked, reuse).
    case revoked(sessionID: SessionID, userID: UserID)
    /// The token is past its expiry.
    case expired
    /// No such token.
    case notFound
}

/// The state of a presented refresh token, from ``AccountStore/checkRefreshToken(presentedHash:now:)``.
public enum RefreshTokenCheck: Sendable, Hashable {
    /// The session's current token, unexpired.
    case current(sessionID: SessionID, userID: UserID)
    /// A token that was already rotated away.
    case used(sessionID: SessionID, userID: UserID)
    /// The token's session was revoked.
    case revoked(sessionID: SessionID, userID: UserID)
    /// The token is past its expiry.
    case expired
    /// No such token.
    case notFound
}

/// A session revocation, for the in-memory revocation lists of every instance.
public struct SessionRevocation: Sendable, Hashable {
    public var sessionID: SessionID
    public var userID: UserID
    public var revokedAt: Date

    public init(sessionID: SessionID, userID: UserID, revokedAt: Date) {
        self.sessionID = sessionID
        self.userID = userID
        self.revokedAt = revokedAt
    }
}

/// The Apple refresh token kept for a user (encrypted by the caller), for revocation and periodic validation.
public struct AppleTokenRecord: Sendable, Hashable {
    public var userID: UserID
    /// The client id Apple issued the token to (the bundle id or the Services ID).
    public var clientID: ClientID
    /// AES-GCM sealed box of the token (the store never sees it in clear).
    public var encryptedRefreshToken: [UInt8]
    public var storedAt: Date
    public var lastValidatedAt: Date?

    public init(
        userID: UserID,
        clientID: ClientID,
        encryptedRefreshToken: [UInt8],
        storedAt: Date,
        lastValidatedAt: Date? = nil
    ) {
        self.userID = userID
        self.clientID = clientID
        self.encryptedRefreshToken = encryptedRefreshToken
        self.storedAt = storedAt
        self.lastValidatedAt = lastValidatedAt
    }
}

/// A key that signs siwa's access tokens, shared by every instance through the store.
public struct SigningKeyRecord: Sendable, Hashable {
    public var kid: String
    /// The private key, sealed by the caller with the data key.
    public var sealedPrivateKey: [UInt8]
    public var createdAt: Date
    /// When it stopped signing (it still verifies until its last tokens expire); `nil` while current.
    public var retiredAt: Date?

    public init(kid: String, sealedPrivateKey: [UInt8], createdAt: Date, retiredAt: Date? = nil) {
        self.kid = kid
        self.sealedPrivateKey = sealedPrivateKey
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}
