import HTTPTypes
import Hummingbird
import NIOCore

/// One rate-limit policy for every route that signs in, refreshes, starts a web flow, issues a nonce or otherwise
/// writes without credentials, whatever its path or client contract: a token bucket per client address (the real
/// client behind trusted proxies, ``TrustedProxies``). Over the limit: 429 with `Retry-After`.
///
/// - Starting a web flow also spends from a second, slower bucket per client: the flow states one client can make the
///   server keep are bounded (``AuthServerConfiguration/maximumFlowsPerClient`` per state lifetime).
/// - Apple's server-to-server notifications are verified by signature and have buckets of their own (per sender
///   address, apart from the users' buckets): a user flooding from the same address cannot make a `consent-revoked`
///   delivery fail, and a forger flooding the route spends only its own address's budget, not Apple's.
/// - Reads (`GET /api/me`, the JWKS, health and metrics) are not limited.
/// - On a store shared by several instances (PostgreSQL), the buckets are counted with theirs (``SharedLimits``): the
///   limits hold for the whole deployment, not for each instance.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    /// What a request spends.
    enum Budget: Equatable {
        /// The per-client bucket.
        case client
        /// The per-client bucket and the per-client flow bucket.
        case flowStart
        /// The notifications' own bucket.
        case notifications
    }

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

    /// Paths of GET routes that start a web flow (siwa's and the contracts').
    static let flowStartPaths: Set<String> = ["/auth/apple/authorize", "/auth/apple", "/web/auth/siwa/authorize"]
    /// Paths of GET routes that write: a sign-out, the login page, which renews an expired cookie session, and the
    /// OpenID provider's authorize (it stores a code) and logout.
    static let writingGetPaths: Set<String> = ["/auth/logout", "/login", "/oauth/authorize", "/oauth/logout"]

    /// What a request spends, from its method and path alone (before routing). The path is taken as the router reads
    /// it (empty segments ignored: `/login/` and `//login` are `/login`).
    static func budget(method: HTTPRequest.Method, path rawPath: String) -> Budget? {
        let path = needsNormalizing(rawPath) ? normalized(rawPath) : rawPath
        switch method {
        case .get, .head:
            if flowStartPaths.contains(path) { return .flowStart }
            return writingGetPaths.contains(path) ? .client : nil
        case .options:
            return nil
        default:
            return path == "/auth/apple/notifications" ? .notifications : .client
        }
    }

    /// The bucket of a client address: its ``ClientKey`` (an IPv4 address, or the /64 of an IPv6 one).
    static func bucketKey(_ address: String?) -> String {
        address.map(ClientKey.of) ?? "unknown"
    }

    /// Whether `path` has an empty segment (`//`) or a trailing slash, other than the path `/` itself. Read byte by
    /// byte: `String.contains(_:)` with a string argument is the generic search of `_StringProcessing`, and `count`
    /// walks the characters, which together cost more than the rest of the middleware on every request.
    static func needsNormalizing(_ path: String) -> Bool {
        var previousIsSlash = false
        for byte in path.utf8 {
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash && previousIsSlash { return true }
            previousIsSlash = isSlash
        }
        return previousIsSlash && path.utf8.count > 1
    }

    static func normalized(_ path: String) -> String {
        "/" + path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let budget = Self.budget(method: request.method, path: request.uri.path) else {
            return try await next(request, context)
        }
        let now = clock.now
        var wait: Double?
        let client = Self.bucketKey(context.clientAddress(of: request, trustedProxies: trustedProxies))
        switch budget {
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
        return try await next(request, context)
    }
}
