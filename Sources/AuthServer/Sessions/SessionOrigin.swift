import HTTPTypes
import Hummingbird

/// Where a sign-in came from, kept with its session for the operator console: the browser's or app's `User-Agent`
/// and the client's address (the peer, or the address a trusted proxy names: ``TrustedProxies``).
struct SessionOrigin: Sendable {
    var userAgent: String?
    var clientAddress: String?

    init(userAgent: String? = nil, clientAddress: String? = nil) {
        self.userAgent = userAgent
        self.clientAddress = clientAddress
    }

    /// The origin of `request`, with the client address read as the rate limiter reads it.
    init(_ request: Request, context: SiwaRequestContext, configuration: AuthServerConfiguration) {
        self.init(
            userAgent: request.headers[.userAgent],
            clientAddress: context.clientAddress(of: request, trustedProxies: configuration.trustedProxies)
        )
    }
}
