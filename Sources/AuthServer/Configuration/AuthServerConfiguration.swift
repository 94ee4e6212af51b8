#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Settings of the server itself (Apple's side is `AppleSignInConfiguration`).
public struct AuthServerConfiguration: Sendable {
    /// The server's public URL: the `iss` of its access tokens, and the base of web-flow URLs.
    public var publicURL: String
    /// The `aud` of access tokens.
    public var accessTokenAudience: String
    /// Seconds an access token lives (default 15 minutes).
    public var accessTokenLifetime: TimeInterval
    /// Seconds a refresh token lives (default 30 days); every use rotates it.
    public var refreshTokenLifetime: TimeInterval
    /// Seconds after a refresh token's rotation during which presenting it again gets a new token of the same session
    /// instead of revoking the session as reuse (default 5; 0 turns it off): two browser tabs, or a client retrying a
    /// refresh whose answer it lost, present one token at nearly the same time.
    public var refreshReuseGrace: TimeInterval = 5
    /// Accept native sign-ins only with a nonce issued by `POST /auth/apple/nonce` (replay protection).
    public var requireServerNonce: Bool
    /// Seconds a server nonce lives (default 10 minutes).
    public var serverNonceLifetime: TimeInterval
    /// Largest request body accepted, in bytes (default 64 KiB).
    public var maximumBodySize: Int
    /// Requests per second allowed per client IP on `/auth/*`, with this burst.
    public var authRateLimit: RateLimit?
    /// How often the revocation list and signing keys are refreshed from the store (default 5 s).
    public var storeRefreshInterval: Duration
    /// Where `GET /metrics` is answered (Prometheus text): a listener of its own, never the public port. With it the
    /// server counts requests, sign-ins, refreshes and Apple calls; `nil` (the default): nothing is counted.
    public var metricsListener: MetricsListener?
    /// The networks the admin routes (`/admin`, `/admin/api/`) answer, by the client's address as the rate limits see
    /// it (through ``trustedProxies``); others get 403 `admin_network_refused`. Empty (the default): any network.
    public var adminNetworks = AddressRanges.none
    /// Apple's notifications, account deletion with revocation at Apple, periodic validation of Apple tokens.
    public var lifecycle = AccountLifecycleConfiguration()
    /// The tutorials' client contracts served next to siwa's own API (all off by default).
    public var compatibility = CompatibilityConfiguration()
    /// How the end users' pages present the product (name, logo, button style, support, after sign-in).
    public var branding = BrandingConfiguration()
    /// The OpenID provider's registered relying parties (none by default).
    public var openID = OpenIDConfiguration()
    /// Link a new Apple ID to an existing account with the same email (off by default): only when the token's email
    /// is verified and not a relay address, and so is the account's.
    public var linkAccountsByEmail = false
    /// The periodic purge of expired rows.
    public var housekeeping = HousekeepingConfiguration()
    /// The webhooks to the app's backend (none by default).
    public var webhooks = WebhookConfiguration()
    /// Every endpoint siwa delivers to: the webhook endpoints, then each relying party's back-channel logout URI.
    public var deliveryEndpoints: [WebhookEndpoint] {
        webhooks.endpoints + openID.clients.compactMap(\.backchannelLogoutEndpoint)
    }
    /// A connection that completes no request part for this long is closed (default 30 s; `nil`: never). Hummingbird
    /// counts only a fully received request head or body chunk as activity, so this is also the header timeout: a
    /// client that trickles a header byte by byte (Slowloris) is closed this long after it connected.
    public var idleTimeout: Duration? = .seconds(30)
    /// The most accounts kept in memory for `GET /api/me` (default 50,000; about 1 KB each). Past it the cache starts
    /// over, so memory stays bounded however many accounts the database holds.
    public var userCacheCapacity = 50_000
    /// Largest request head (all header fields together) accepted, in bytes (default 32 KiB); more is a bare 400.
    public var maximumHeaderSize = 32 * 1024
    /// The web sign-in and browser sessions (`/login`, cookies, return URLs).
    public var web: WebSignInConfiguration
    /// Caps on connections and on how long a request may take to arrive.
    public var connections = ConnectionLimits()
    /// The reverse proxies in front of siwa: only from these peers is `Forwarded` / `X-Forwarded-For` read for the
    /// client address (rate limits, per-address connection caps). Empty: the TCP peer is the client.
    public var trustedProxies = TrustedProxies.none
    /// Requests per second allowed for Apple's server-to-server notifications per sender address, with this burst:
    /// their own budget, apart from the per-client limit meant for users (`nil`: unlimited).
    public var notificationRateLimit: RateLimit? = RateLimit(requestsPerSecond: 50, burst: 500)
    /// Sessions one identity token may open while it is valid (default 3: a client may retry a sign-in whose answer
    /// it lost); replaying it more is refused with 401 `identity_token_replayed`. 0: unbounded; more than
    /// ``AccountStore/SessionBound/maximumLimit`` (100) is taken as that.
    public var maximumSessionsPerIdentityToken = 3
    /// Web flows one client address may start per state lifetime (the flow states it can make the server keep).
    public var maximumFlowsPerClient = 30
    /// Seconds browsers keep to https for this host, sent as `Strict-Transport-Security: max-age=…` on every answer
    /// when siwa serves https itself (default a year; `nil`: not sent). On plain http it is never sent: behind a proxy
    /// that terminates TLS, the proxy sends it.
    public var hstsMaxAge: Int? = 31_536_000
    /// How often the server's own TLS certificate files are checked for a renewal (SIGHUP reloads at once).
    public var tlsReloadInterval: Duration = .seconds(30)
    /// How often the data-key file is checked for a change (SIGHUP, and sealed data naming a key the server lacks,
    /// re-read it at once).
    public var dataKeyReloadInterval: Duration = .seconds(5)

    /// Caps on connections and request time.
    public struct ConnectionLimits: Sendable {
        /// Connections open at once; more are closed as soon as they are accepted (default 2,048). siwa raises its
        /// descriptor limit to the hard limit at start-up and keeps this well below it.
        public var maximumConnections = 2_048
        /// Connections open at once from one client address, counting an IPv6 address as its /64 as the rate limits do
        /// (trusted proxies excepted; default 64).
        public var maximumConnectionsPerAddress = 64
        /// Time from a request's first byte to its complete head (default 10 s). A connection that sends nothing is
        /// closed by the idle timeout instead.
        public var requestHeadTimeout: Duration = .seconds(10)
        /// Time from a request's head to the end of its body (default 30 s).
        public var requestBodyTimeout: Duration = .seconds(30)

        public init() {}
    }

    /// A token-bucket limit.
    public struct RateLimit: Sendable {
        public var requestsPerSecond: Double
        public var burst: Double

        public init(requestsPerSecond: Double, burst: Double) {
            self.requestsPerSecond = requestsPerSecond
            self.burst = burst
        }
    }

    public init(
        publicURL: String = "http://localhost:8080",
        accessTokenAudience: String = "siwa",
        accessTokenLifetime: TimeInterval = 900,
        refreshTokenLifetime: TimeInterval = 30 * 86_400,
        requireServerNonce: Bool = false,
        serverNonceLifetime: TimeInterval = 600,
        maximumBodySize: Int = 64 * 1024,
        authRateLimit: RateLimit? = RateLimit(requestsPerSecond: 20, burst: 40),
        storeRefreshInterval: Duration = .seconds(5),
        metricsListener: MetricsListener? = nil,
        web: WebSignInConfiguration = WebSignInConfiguration()
    ) {
        self.publicURL = publicURL
        self.accessTokenAudience = accessTokenAudience
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.requireServerNonce = requireServerNonce
        self.serverNonceLifetime = serverNonceLifetime
        self.maximumBodySize = maximumBodySize
        self.authRateLimit = authRateLimit
        self.storeRefreshInterval = storeRefreshInterval
        self.metricsListener = metricsListener
        self.web = web
    }
}
