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
    /// How the request's access token was presented and checked, set by ``SessionAuthenticator`` (`nil`: the
    /// request carried none).
    var authentication: Authentication?

    /// The access token's claims, when the request carries a valid one.
    public var session: AccessTokenClaims? {
        switch authentication {
        case .bearer(let claims), .cookie(let claims): claims
        case .refused, nil: nil
        }
    }

    /// What ``SessionAuthenticator`` found.
    enum Authentication: Sendable {
        /// A bearer token (`Authorization: Bearer`), checked; no CSRF check is needed.
        case bearer(AccessTokenClaims)
        /// A session cookie (siwa's or a contract's), checked, and the CSRF check passed when the method changes state.
        case cookie(AccessTokenClaims)
        /// A token or cookie was presented and refused (invalid, revoked, or a failed CSRF check).
        case refused(AuthServerError)
    }

    /// The authenticated session, or the 401 (or 403) naming why not.
    func requireSession() throws(AuthServerError) -> (claims: AccessTokenClaims, byCookie: Bool) {
        switch authentication {
        case .bearer(let claims): return (claims, false)
        case .cookie(let claims): return (claims, true)
        case .refused(let error): throw error
        case nil:
            throw AuthServerError.unauthorized(
                AuthServerError.Code.missingToken,
                "send 'Authorization: Bearer <access token>' or the session cookie"
            )
        }
    }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Dates as ISO 8601 in every JSON answer.
    public var responseEncoder: JSONEncoder { Self.encoder }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}
