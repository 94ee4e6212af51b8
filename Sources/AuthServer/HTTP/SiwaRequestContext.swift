import AccountStore
public import Hummingbird
public import NIOCore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The request context of siwa's routes: the client's address (for rate limits) and, once authenticated, the
/// access token's claims.
public struct SiwaRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Who is calling, as ``RouteGuard`` found it for the route's ``RouteAccess`` (`nil`: the request presented no
    /// access token the route reads).
    var authentication: Authentication?
    /// The admin API's service token that the guard accepted for this request (`authentication` is then `nil`).
    var serviceToken: AdminToken?
    /// The request's id, client address and caller, as the access log will say them (``AccessLogMiddleware`` sets it
    /// before any other middleware runs).
    var requestLog: RequestLog?

    /// The client's address as the rate limits see it: the peer, or the client a trusted proxy names.
    func clientAddress(of request: Request, trustedProxies: TrustedProxies) -> String? {
        if let requestLog { return requestLog.client }
        return trustedProxies.clientAddress(peer: remoteAddress?.ipAddress, headers: request.headers)
    }

    /// The siwa session of the request, when it presents a valid one the route accepts.
    public var session: AccessTokenClaims? {
        if case .session(let claims, _) = authentication { claims } else { nil }
    }

    /// How an access token came with the request.
    enum Presentation: Sendable, Hashable {
        /// `Authorization: Bearer`: no cross-site check is needed, a browser never adds one on its own.
        case bearer
        /// The named session cookie; on a request that changes state, the cross-site check passed.
        case cookie(String)
        /// The `access_token` field of a form body.
        case formField
    }

    /// The one typed identity of a request's access token.
    enum Authentication: Sendable {
        /// One of siwa's own access tokens, checked.
        case session(AccessTokenClaims, via: Presentation)
        /// An access token siwa's OpenID provider gave a relying party, checked; a session on no route of siwa's own.
        case relyingParty(RelyingPartyAccessClaims, via: Presentation)
        /// A token was presented and refused (invalid, revoked, of a kind the route does not accept, or a failed
        /// cross-site check).
        case refused(AuthServerError)
    }

    /// The authenticated siwa session, or the 401 (or 403) naming why not.
    func requireSession() throws(AuthServerError) -> (claims: AccessTokenClaims, byCookie: Bool) {
        switch authentication {
        case .session(let claims, let presentation):
            if case .cookie = presentation { return (claims, true) }
            return (claims, false)
        case .relyingParty: throw AuthServerError.relyingPartyToken
        case .refused(let error): throw error
        case nil: throw AuthServerError.missingToken
        }
    }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Every JSON answer a handler returns is written by ``JSONAnswer``'s encoder.
    public var responseEncoder: JSONEncoder { JSONAnswer.encoder }
}
