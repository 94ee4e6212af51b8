public import AccountStore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The verified claims of one of siwa's own access tokens: a session on siwa's routes (and the team's services).
///
/// A relying party's access token is a ``RelyingPartyAccessClaims`` instead: the two never stand in for each other.
public struct AccessTokenClaims: Sendable, Hashable {
    /// `sub`: the user.
    public var userID: UserID
    /// `sid`: the session (refresh-token family) the token belongs to.
    public var sessionID: SessionID
    /// `jti`.
    public var tokenID: String
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
}

/// The verified claims of an access token that siwa's OpenID provider gave a relying party (RFC 9068: header
/// `typ: at+jwt`, claims `client_id` and `scope`). It is accepted at `/oauth/userinfo` and by the team's services,
/// never as a session on siwa's own routes.
public struct RelyingPartyAccessClaims: Sendable, Hashable {
    /// `sub`: the user.
    public var userID: UserID
    /// `sid`: the relying party's session at siwa.
    public var sessionID: SessionID
    /// `jti`.
    public var tokenID: String
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `client_id`: the relying party the token was issued to.
    public var clientID: String
    /// `scope`: what the user granted the relying party.
    public var scope: String
}

/// An access token signed by this server, by kind.
public enum VerifiedAccessToken: Sendable, Hashable {
    /// One of siwa's own: a session.
    case session(AccessTokenClaims)
    /// A relying party's (`typ: at+jwt`).
    case relyingParty(RelyingPartyAccessClaims)

    /// The user and session either kind names.
    var subject: (userID: UserID, sessionID: SessionID) {
        switch self {
        case .session(let claims): (claims.userID, claims.sessionID)
        case .relyingParty(let claims): (claims.userID, claims.sessionID)
        }
    }

    var expiresAt: Date {
        switch self {
        case .session(let claims): claims.expiresAt
        case .relyingParty(let claims): claims.expiresAt
        }
    }
}
