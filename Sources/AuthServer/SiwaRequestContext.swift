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
    /// Set by the bearer authentication of `/api/*` routes.
    public var session: AccessTokenClaims?

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
