import HTTPTypes
import Hummingbird

extension SessionOrigin {
    /// The origin of `request`, with the client address read as the rate limiter reads it.
    /// - Parameters:
    ///   - request: the sign-in's request.
    ///   - context: its context, which knows the peer's address.
    ///   - configuration: the proxies whose `X-Forwarded-For` is believed.
    init(_ request: Request, context: SiwaRequestContext, configuration: AuthServerConfiguration) {
        self.init(
            userAgent: request.headers[.userAgent],
            clientAddress: context.clientAddress(of: request, trustedProxies: configuration.trustedProxies)
        )
    }
}
