public import AccountStore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The verified claims of one of siwa's access tokens.
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
    /// `scope`: what a relying party's token grants (siwa's OpenID provider); `nil` for siwa's own tokens.
    public var scope: String? = nil
}
