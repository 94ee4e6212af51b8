import HTTPTypes
import Hummingbird
import NIOCore

/// One rate-limit policy for every route that verifies a credential, signs in, rotates a refresh token, starts a web
/// flow or writes, whatever its path, method or client contract: a token bucket per client address (the real client
/// behind trusted proxies, ``TrustedProxies``). What a route spends is declared with the route
/// (``RouteAccess/budget(for:)``), and ``RouteGuard`` spends it before it reads anything of the request. Over the limit:
/// 429 with `Retry-After`.
///
/// - Starting a web flow also spends from a second, slower bucket per client: the flow states one client can make the
///   server keep are bounded (``AuthServerConfiguration/maximumFlowsPerClient`` per state lifetime).
/// - Apple's server-to-server notifications are verified by signature and have buckets of their own (per sender
///   address, apart from the users' buckets): a user flooding from the same address cannot make a `consent-revoked`
///   delivery fail, and a forger flooding the route spends only its own address's budget, not Apple's.
/// - Reads (`GET /api/me`, the JWKS, health and metrics) are not limited.
/// - On a store shared by several instances (PostgreSQL), the buckets are counted with theirs (``SharedLimits``): the
///   limits hold for the whole deployment, not for each instance.
struct RateLimiter: Sendable {
    let clients: (any RateLimitBuckets)?
    let flows: (any RateLimitBuckets)?
    let notifications: (any RateLimitBuckets)?
    let trustedProxies: TrustedProxies
    private let clock = ContinuousClock()

    /// - Parameters:
    ///   - configuration: The limits.
    ///   - buckets: Makes a set of buckets from its name and limit: ``InMemoryRateLimitBuckets`` for one process (the
    ///     default), or buckets shared with the other instances (``SharedLimits``).
    init(
        configuration: AuthServerConfiguration,
        buckets: (String, AuthServerConfiguration.RateLimit) -> any RateLimitBuckets = { _, limit in
            InMemoryRateLimitBuckets(limit: limit)
        }
    ) {
        self.clients = configuration.authRateLimit.map { buckets("client", $0) }
        self.flows = configuration.authRateLimit.map { _ in
            let perClient = Double(max(1, configuration.maximumFlowsPerClient))
            return buckets(
                "flow",
                .init(requestsPerSecond: perClient / max(1, configuration.web.stateLifetime), burst: perClient)
            )
        }
        self.notifications = configuration.notificationRateLimit.map { buckets("notification", $0) }
        self.trustedProxies = configuration.trustedProxies
    }

    /// The bucket of a client address: its ``ClientKey`` (an IPv4 address, or the /64 of an IPv6 one).
    static func bucketKey(_ address: String?) -> String {
        address.map(ClientKey.of) ?? "unknown"
    }

    /// Spends `budget` for the request's client.
    ///
    /// - Parameters:
    ///   - budget: What the route spends.
    ///   - request: The request.
    ///   - context: Its context, for the peer's address.
    /// - Throws: ``AuthServerError`` 429 `rate_limited`, with `Retry-After`, when the client is over its limit.
    func spend(_ budget: RouteAccess.Budget, _ request: Request, _ context: SiwaRequestContext) throws(AuthServerError)
    {
        let now = clock.now
        var wait: Double?
        let client = Self.bucketKey(context.clientAddress(of: request, trustedProxies: trustedProxies))
        switch budget {
        case .none:
            return
        case .notifications:
            wait = notifications?.take(client, now: now)
        case .client, .flowStart:
            wait = clients?.take(client, now: now)
            if wait == nil, budget == .flowStart { wait = flows?.take(client, now: now) }
        }
        if let wait {
            throw AuthServerError(
                .tooManyRequests,
                AuthServerError.Code.rateLimited,
                "too many requests from this address; retry later",
                headers: [.retryAfter: String(max(1, Int(wait.rounded(.up))))]
            )
        }
    }
}
