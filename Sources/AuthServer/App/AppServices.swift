import AccountStore
import AppleSignIn
import Logging
import Tracing

/// Everything the server is made of, made once by ``build(configuration:apple:store:transport:sealer:sharedLimits:clock:logger:tracer:)``:
/// the composition root's first step. ``buildRouter(tls:)`` then registers every part's routes and
/// ``backgroundServices(tls:guarding:)`` assembles what runs beside the server.
struct AppServices: Sendable {
    let configuration: AuthServerConfiguration
    let apple: AppleSignInConfiguration
    /// The store every part uses: each call timed and traced, when either is on.
    let store: any AccountStore
    let sealer: DataSealer
    let clock: any WallClock
    let logger: Logger
    /// One registry per application, never the global `MetricsSystem`: tests run many applications in one process.
    /// `nil` without a metrics listener.
    let metrics: ServerMetrics?
    let tracer: (any Tracer)?
    /// The limits counted with every instance that shares the store; `nil` when they are this process's.
    let sharedLimits: SharedLimits?
    /// Whether Apple accepts siwa's client secret, as every Apple call reports it.
    let appleHealth: AppleCredentialHealth
    /// Apple's token and revocation endpoints; `nil` without Apple credentials.
    let appleClient: AppleAPIClient?
    let issuer: AccessTokenIssuer
    let revocations: RevocationList
    let users: UserCache
    let sessions: SessionService
    let signIn: SignInService
    let lifecycle: AccountLifecycle
    let adminAccess: AdminAccess
    /// Which webhook endpoints are disabled, for the console's banner; the deliverer keeps it current.
    let webhookHealth = WebhookHealth()

    /// Makes every service, and fills the caches that must be current before the first request (revoked sessions,
    /// users).
    /// - Parameters: as ``buildApplication(configuration:apple:store:transport:sealer:sharedLimits:clock:host:port:logger:tls:tracer:onServerRunning:)``
    ///   takes them (the logger with the request id added).
    /// - Throws: what reading the signing keys or the caches from the store throws.
    static func build(
        configuration: AuthServerConfiguration,
        apple: AppleSignInConfiguration,
        store givenStore: any AccountStore,
        transport givenTransport: any HTTPTransport,
        sealer: DataSealer,
        sharedLimits givenSharedLimits: SharedLimits?,
        clock: any WallClock,
        logger: Logger,
        tracer: (any Tracer)?
    ) async throws -> AppServices {
        // Counted only when a listener answers them.
        let metrics = configuration.metricsListener != nil ? ServerMetrics() : nil
        let store: any AccountStore =
            metrics != nil || tracer != nil
            ? InstrumentedAccountStore(base: givenStore, metrics: metrics, tracer: tracer) : givenStore
        // Each call to Apple a span of its own, its trace context sent along, when tracing is on.
        let transport: any HTTPTransport =
            tracer.map { TracingTransport(base: givenTransport, tracer: $0) } ?? givenTransport
        // A store shared by several instances counts the limits for all of them.
        let sharedLimits =
            givenSharedLimits ?? store.sharedCounters().map { SharedLimits(counters: $0, clock: clock, logger: logger) }
        sharedLimits?.report(to: metrics)
        let verifier = IdentityTokenVerifier(
            configuration: apple,
            keys: appleKeys(apple, transport: transport, metrics: metrics, clock: clock, logger: logger),
            clock: clock
        )
        // Every Apple call below reports its answer here: the first invalid_client is raised at once.
        let appleHealth = AppleCredentialHealth(metrics: metrics, clock: clock, logger: logger)
        let appleClient = Self.appleClient(
            apple,
            transport: transport,
            verifier: verifier,
            observer: appleHealth,
            clock: clock,
            logger: logger
        )
        let issuer = try await AccessTokenIssuer(
            configuration: configuration,
            store: store,
            sealer: sealer,
            clock: clock
        )
        let revocations = RevocationList(retention: configuration.accessTokenLifetime + 120)
        let users = UserCache(capacity: configuration.userCacheCapacity)
        try await users.refresh(from: store, now: clock.now)
        try await revocations.refresh(from: store, now: clock.now)
        let sessions = SessionService(
            configuration: configuration,
            store: store,
            issuer: issuer,
            revocations: revocations,
            users: users,
            apple: appleClient,
            sealer: sealer,
            metrics: metrics,
            clock: clock,
            logger: logger
        )
        return AppServices(
            configuration: configuration,
            apple: apple,
            store: store,
            sealer: sealer,
            clock: clock,
            logger: logger,
            metrics: metrics,
            tracer: tracer,
            sharedLimits: sharedLimits,
            appleHealth: appleHealth,
            appleClient: appleClient,
            issuer: issuer,
            revocations: revocations,
            users: users,
            sessions: sessions,
            verifier: verifier
        )
    }

    /// The services that `sessions` and `verifier` complete: sign-in, the account lifecycle and the admin check.
    private init(
        configuration: AuthServerConfiguration,
        apple: AppleSignInConfiguration,
        store: any AccountStore,
        sealer: DataSealer,
        clock: any WallClock,
        logger: Logger,
        metrics: ServerMetrics?,
        tracer: (any Tracer)?,
        sharedLimits: SharedLimits?,
        appleHealth: AppleCredentialHealth,
        appleClient: AppleAPIClient?,
        issuer: AccessTokenIssuer,
        revocations: RevocationList,
        users: UserCache,
        sessions: SessionService,
        verifier: IdentityTokenVerifier
    ) {
        self.configuration = configuration
        self.apple = apple
        self.store = store
        self.sealer = sealer
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        self.tracer = tracer
        self.sharedLimits = sharedLimits
        self.appleHealth = appleHealth
        self.appleClient = appleClient
        self.issuer = issuer
        self.revocations = revocations
        self.users = users
        self.sessions = sessions
        signIn = SignInService(
            configuration: configuration,
            store: store,
            verifier: verifier,
            apple: appleClient,
            sessions: sessions,
            sealer: sealer,
            clock: clock,
            logger: logger,
            metrics: metrics,
            boundsSessionsInStore: sharedLimits != nil,
            tracer: tracer
        )
        lifecycle = AccountLifecycle(
            configuration: configuration,
            store: store,
            verifier: verifier,
            apple: appleClient,
            sealer: sealer,
            sessions: sessions,
            clock: clock,
            logger: logger
        )
        adminAccess = AdminAccess(configuration: configuration, store: store, sessions: sessions)
    }

    /// Apple's token and revocation endpoints, with client secrets signed by the configured key; `nil` without Apple
    /// credentials.
    private static func appleClient(
        _ apple: AppleSignInConfiguration,
        transport: any HTTPTransport,
        verifier: IdentityTokenVerifier,
        observer: AppleCredentialHealth,
        clock: any WallClock,
        logger: Logger
    ) -> AppleAPIClient? {
        apple.credentials.map { credentials in
            AppleAPIClient(
                configuration: apple,
                transport: transport,
                verifier: verifier,
                clientSecrets: ClientSecretFactory(
                    credentials: credentials,
                    lifetime: apple.clientSecretLifetime,
                    clock: clock
                ),
                logger: logger,
                observer: observer
            )
        }
    }

    /// Apple's key set: the configured source, falling back to (or fetching from) Apple's endpoint, counted under the
    /// configured set's fallback so that the metric shows Apple's endpoint failing.
    private static func appleKeys(
        _ apple: AppleSignInConfiguration,
        transport: any HTTPTransport,
        metrics: ServerMetrics?,
        clock: any WallClock,
        logger: Logger
    ) -> AppleKeyCache {
        let endpoint: any AppleKeySource = AppleKeysEndpoint(
            baseURL: apple.appleBaseURL,
            transport: transport,
            logger: logger
        )
        return AppleKeyCache(
            source: apple.keySource(
                fetching: metrics.map { CountingKeySource(source: endpoint, metrics: $0) } ?? endpoint,
                logger: logger
            ),
            clock: clock,
            logger: logger
        )
    }
}
