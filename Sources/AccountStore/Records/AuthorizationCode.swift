import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An OpenID Connect authorization code between `GET /oauth/authorize` and its redemption at `POST /oauth/token`,
/// kept in the store so that any instance can redeem it. Only the code's SHA-256 is kept.
public struct AuthorizationCodeRecord: Sendable, Hashable {
    /// SHA-256 of the code (the code itself is never stored).
    public var codeHash: [UInt8]
    /// The relying party the code was issued to.
    public var clientID: String
    /// The `redirect_uri` of the authorization request; the token request must name the same.
    public var redirectURI: String
    /// The granted scopes, space-separated (`openid email`).
    public var scope: String
    /// The PKCE `code_challenge` (S256), when the request carried one.
    public var codeChallenge: String?
    /// The relying party's `nonce`, copied into the ID token.
    public var nonce: String?
    public var userID: UserID
    /// The browser session (siwa's own web session) that authorized it.
    public var browserSessionID: SessionID
    /// When the user last signed in with Apple (the ID token's `auth_time`).
    public var authTime: Date
    public var createdAt: Date
    public var expiresAt: Date
    /// When it was redeemed; `nil` until then.
    public var redeemedAt: Date?
    /// The session its redemption started (ended if the code is presented again); `nil` until redeemed.
    public var issuedSessionID: SessionID?

    public init(
        codeHash: [UInt8],
        clientID: String,
        redirectURI: String,
        scope: String,
        codeChallenge: String?,
        nonce: String?,
        userID: UserID,
        browserSessionID: SessionID,
        authTime: Date,
        createdAt: Date,
        expiresAt: Date,
        redeemedAt: Date? = nil,
        issuedSessionID: SessionID? = nil
    ) {
        self.codeHash = codeHash
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.scope = scope
        self.codeChallenge = codeChallenge
        self.nonce = nonce
        self.userID = userID
        self.browserSessionID = browserSessionID
        self.authTime = authTime
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.redeemedAt = redeemedAt
        self.issuedSessionID = issuedSessionID
    }
}

/// The outcome of ``AccountStore/redeemAuthorizationCode(codeHash:startingSession:now:)``.
public enum AuthorizationCodeOutcome: Sendable, Hashable {
    /// The code was unused and unexpired: it is now redeemed and the session started.
    case redeemed(AuthorizationCodeRecord)
    /// The code had been redeemed before (a replay): the session its first redemption started is now revoked
    /// (`endedSession`, `nil` when it had already ended).
    case replayed(AuthorizationCodeRecord, endedSession: SessionID?)
    /// The code is past its expiry.
    case expired
    /// No such code.
    case notFound
}
