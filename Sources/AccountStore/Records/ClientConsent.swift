import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What a user allowed a public OpenID relying party (a native or single-page app) on siwa's consent page: the
/// scopes, remembered so that the page is shown once per user, client and redirect URI, and again only when the client
/// asks for more (RFC 8252 §8.6: a public client must not be approved silently, since any app can claim its redirect
/// URI; a consent given for one of the client's redirect URIs says nothing about another).
public struct ClientConsentRecord: Sendable, Hashable {
    public var userID: UserID
    /// The relying party's `client_id`.
    public var clientID: String
    /// The redirect URI the user saw the answer would go to, exactly as registered.
    public var redirectURI: String
    /// The allowed scopes, space-separated (`openid email`).
    public var scope: String
    /// When the user last allowed it.
    public var grantedAt: Date

    /// - Parameters:
    ///   - userID: the user who allowed it.
    ///   - clientID: the relying party's `client_id`.
    ///   - redirectURI: the redirect URI the consent page named.
    ///   - scope: the allowed scopes, space-separated.
    ///   - grantedAt: when.
    public init(userID: UserID, clientID: String, redirectURI: String, scope: String, grantedAt: Date) {
        self.userID = userID
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.scope = scope
        self.grantedAt = grantedAt
    }
}
