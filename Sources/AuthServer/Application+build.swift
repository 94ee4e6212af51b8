public import AccountStore
public import AppleSignIn
import HTTPTypes
public import Hummingbird
import HummingbirdCore
public import Logging
public import NIOCore
import ServiceLifecycle
public import Tracing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds the siwa server: the canonical API, well-known keys and health routes, over an injected store and HTTP
/// transport. The CLI and the tests call this same function.
/// - Parameters:
///   - configuration: the server's own settings.
///   - apple: client ids, credentials (for code exchange) and Apple's base URL.
///   - store: accounts and sessions.
///   - transport: the HTTP client towards Apple.
///   - sealer: seals Apple refresh tokens and signing keys at rest under the data keys (re-read from their file when
///     they come from one).
///   - sharedLimits: counts the limits with every instance that shares the store; by default made from
///     ``AccountStore/sharedCounters()`` (PostgreSQL), or none (SQLite, in memory: the limits are this process's).
///     Pass one to reconcile it on a schedule of your own (``SharedLimits/reconcile()``).
///   - clock: wall clock.
///   - host: address to listen on.
///   - port: port (0 for any free one).
///   - logger: request and event logs (never tokens); every line a request causes carries its `request_id`
///     (``Logging/Logger/MetadataProvider/siwaRequestID`` is added to it).
///   - tls: serve https with this certificate (answers then carry `Strict-Transport-Security`, see
///     ``AuthServerConfiguration/hstsMaxAge``); `nil` for plain http.
///   - tracer: with one, a span per request (its parent the caller's `traceparent`) with children for the identity
///     token's verification, each store call and each call to Apple (whose `traceparent` goes along); `nil` (the
///     default) traces nothing and costs nothing.
///   - onServerRunning: called once the port is bound and the server accepts connections.
public func buildApplication(
    configuration: AuthServerConfiguration,
    apple: AppleSignInConfiguration,
    store: any AccountStore,
    transport: any HTTPTransport,
    sealer: DataSealer,
    sharedLimits: SharedLimits? = nil,
    clock: any WallClock = SystemWallClock(),
    host: String = "127.0.0.1",
    port: Int = 8080,
    logger: Logger = Logger(label: "siwa"),
    tls: ServerTLS? = nil,
    tracer: (any Tracer)? = nil,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    try await assembleApplication(
        configuration: configuration,
        apple: apple,
        store: store,
        transport: transport,
        sealer: sealer,
        sharedLimits: sharedLimits,
        clock: clock,
        host: host,
        port: port,
        logger: logger,
        tls: tls,
        tracer: tracer,
        onServerRunning: onServerRunning
    ).application
}

/// ``buildApplication(configuration:apple:store:transport:sealer:sharedLimits:clock:host:port:logger:tls:tracer:onServerRunning:)``, and
/// the routes its router registered, which a test compares with the OpenAPI document (`docs/openapi.json`), and the
/// access each was registered with (``RouteAccess``), which a test walks with every kind of credential; and the
/// access of the metrics listener's routes (empty without one).
func assembleApplication(
    configuration: AuthServerConfiguration,
    apple: AppleSignInConfiguration,
    store: any AccountStore,
    transport: any HTTPTransport,
    sealer: DataSealer,
    sharedLimits givenSharedLimits: SharedLimits? = nil,
    clock: any WallClock,
    host: String,
    port: Int,
    logger: Logger,
    tls: ServerTLS?,
    tracer: (any Tracer)? = nil,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void
) async throws -> (
    application: some ApplicationProtocol, routes: [RegisteredRoute], policies: [RegisteredRoute: RouteAccess],
    metricsPolicies: [RegisteredRoute: RouteAccess]
) {
    let logger = logger.addingSiwaRequestID()
    // One registry per application, never the global `MetricsSystem`: tests run many applications in one process.
    // Counted only when a listener answers them.
    let metrics = configuration.metricsListener != nil ? ServerMetrics() : nil
    // Every part below uses the store through this one: each call timed and traced, when either is on.
    let store: any AccountStore =
        metrics != nil || tracer != nil
        ? InstrumentedAccountStore(base: store, metrics: metrics, tracer: tracer) : store
    // Each call to Apple a span of its own, its trace context sent along, when tracing is on.
    let transport: any HTTPTransport = tracer.map { TracingTransport(base: transport, tracer: $0) } ?? transport
    // A store shared by several instances counts the limits for all of them.
    let sharedLimits =
        givenSharedLimits ?? store.sharedCounters().map { SharedLimits(counters: $0, clock: clock, logger: logger) }
    sharedLimits?.report(to: metrics)
    let endpoint: any AppleKeySource = AppleKeysEndpoint(
        baseURL: apple.appleBaseURL,
        transport: transport,
        logger: logger
    )
    // Counted under the configured set's fallback, so that the metric shows Apple's endpoint failing.
    let keys = AppleKeyCache(
        source: apple.keySource(
            fetching: metrics.map { CountingKeySource(source: endpoint, metrics: $0) } ?? endpoint,
            logger: logger
        ),
        clock: clock,
        logger: logger
    )
    let verifier = IdentityTokenVerifier(configuration: apple, keys: keys, clock: clock)
    // Every Apple call below reports its answer here: the first invalid_client is raised at once.
    let appleHealth = AppleCredentialHealth(metrics: metrics, clock: clock, logger: logger)
    let appleClient = apple.credentials.map { credentials in
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
            observer: appleHealth
        )
    }
    let issuer = try await AccessTokenIssuer(configuration: configuration, store: store, sealer: sealer, clock: clock)
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
    let signIn = SignInService(
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
    let lifecycle = AccountLifecycle(
        configuration: configuration,
        store: store,
        verifier: verifier,
        apple: appleClient,
        sealer: sealer,
        sessions: sessions,
        clock: clock,
        logger: logger
    )

    let compatibility = configuration.compatibility
    let web = SessionCookies(configuration: configuration)
    let serviceStackCookies = (
        access: ServiceStackController.tokenCookie, refresh: ServiceStackController.refreshCookie
    )
    let router = Router(context: SiwaRequestContext.self)
    // First: its request id is on every line the others log, and it logs the answer they make of every error.
    router.add(
        middleware: AccessLogMiddleware(trustedProxies: configuration.trustedProxies, metrics: metrics, logger: logger)
    )
    // Next: its span then covers the rest, and carries the request id the access log made.
    if let tracer {
        router.add(middleware: RequestTracingMiddleware(tracer: tracer, trustedProxies: configuration.trustedProxies))
    }
    // Next, so that the errors the next one answers carry it too.
    if tls != nil, let maxAge = configuration.hstsMaxAge {
        router.add(middleware: StrictTransportSecurityMiddleware(maxAge: maxAge))
    }
    router.add(middleware: NoSniffMiddleware())
    let adminAccess = AdminAccess(configuration: configuration, store: store, sessions: sessions)
    let guarding = RouteGuard(
        sessions: sessions,
        configuration: configuration,
        cookieNames: [web.sessionName] + (compatibility.serviceStack ? [serviceStackCookies.access] : []),
        credentialCookieNames: [web.sessionName, web.refreshName]
            + (compatibility.serviceStack ? [serviceStackCookies.access, serviceStackCookies.refresh] : []),
        serviceTokens: ServiceTokens(store: store, clock: clock),
        requireAdmin: { context in try await adminAccess.admin(context).subject },
        limiter: configuration.authRateLimit == nil && configuration.notificationRateLimit == nil
            ? nil
            : RateLimiter(configuration: configuration) { name, limit -> any RateLimitBuckets in
                if let sharedLimits { return sharedLimits.buckets(name, limit: limit) }
                return InMemoryRateLimitBuckets(limit: limit)
            }
    )
    // Every route below is registered with who may call it; the guard enforces it before the handler runs.
    let routes = PolicedRoutes(router: router, guarding: guarding, declarations: PolicedRoutes.Declarations())
    let auth = routes.group("/auth")
    let api = routes.group("/api")
    SessionController(
        configuration: configuration,
        signIn: signIn,
        sessions: sessions,
        contractCookies: compatibility.serviceStack ? [serviceStackCookies] : []
    ).addRoutes(to: auth, api: api)
    let webController = try WebController(
        configuration: configuration,
        apple: apple,
        store: store,
        signIn: signIn,
        sessions: sessions,
        clock: clock
    )
    webController.addRoutes(to: routes, auth: auth)
    lifecycle.addRoutes(to: auth, api: api)
    if compatibility.serviceStack {
        ServiceStackController(configuration: configuration, signIn: signIn, sessions: sessions, web: webController)
            .addRoutes(to: routes, auth: auth)
    }
    if compatibility.vaporTutorial {
        VaporTutorialController(configuration: configuration, signIn: signIn, sessions: sessions, web: webController)
            .addRoutes(to: routes)
    }
    if compatibility.rentManager {
        RentManagerController(configuration: configuration, signIn: signIn, sessions: sessions).addRoutes(to: routes)
    }

    OpenIDController(
        configuration: configuration,
        store: store,
        sessions: sessions,
        audit: sessions.audit,
        clock: clock,
        consentTokens: FormToken(sealer: sealer, purpose: .clientConsent)
    )
    .addRoutes(to: routes)

    let adminActions = AdminActions(
        access: adminAccess,
        store: store,
        sessions: sessions,
        deletions: lifecycle.deletions,
        clock: clock,
        logger: logger
    )
    AdminAPIController(
        configuration: configuration,
        access: adminAccess,
        store: store,
        actions: adminActions,
        clock: clock
    ).addRoutes(to: routes)
    AdminConsoleController(
        configuration: configuration,
        access: adminAccess,
        store: store,
        actions: adminActions,
        formTokens: FormToken(sealer: sealer, purpose: .adminForms),
        keys: AdminConsoleController.Keys(
            appleHealth: appleHealth,
            appleCredentialsConfigured: appleClient != nil,
            sealer: sealer
        ),
        clock: clock
    ).addRoutes(to: routes)

    routes.get("/.well-known/jwks.json", access: .open) { _, _ -> Response in
        Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: ByteBuffer(bytes: issuer.jwks()))
        )
    }
    let home = HomePage(
        webSignIn: apple.servicesID != nil,
        contracts: [
            compatibility.serviceStack ? "ServiceStack" : nil, compatibility.vaporTutorial ? "Vapor tutorial" : nil,
            compatibility.rentManager ? "Rent Manager" : nil,
        ].compactMap { $0 }
    ).page
    routes.get("/", access: .open) { _, _ -> Response in home.response() }
    let openAPI = ByteBuffer(string: OpenAPIDocument.json)
    routes.get("/openapi.json", access: .open) { _, _ -> Response in
        Response(
            status: .ok,
            headers: [.contentType: "application/vnd.oai.openapi+json", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: openAPI)
        )
    }
    routes.get("/healthz", access: .open) { _, _ -> HTTPResponse.Status in .ok }
    routes.get("/readyz", access: .open) { _, _ -> Response in
        do {
            try await store.ping()
            // Still ready while Apple refuses the client secret: sign-ins verify without it.
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        bytes: ReadinessDetail(
                            appleHealth: appleHealth,
                            appleCredentialsConfigured: appleClient != nil
                        ).json
                    )
                )
            )
        } catch {
            throw AuthServerError(
                .serviceUnavailable,
                AuthServerError.Code.databaseUnavailable,
                "the database cannot be reached"
            )
        }
    }

    let connections = ConnectionLimiter(
        limits: configuration.connections,
        trustedProxies: configuration.trustedProxies,
        metrics: metrics
    )
    let http = guardedHTTP1(configuration, connections)
    let registered = router.routes.map { RegisteredRoute(method: $0.method.rawValue, path: $0.path.description) }
    var app = Application(
        router: router,
        server: tls.map { tls in
            HTTPServerBuilder { responder in
                ReloadingTLSChannel(base: HTTP1Channel(responder: responder, configuration: http), tls: tls)
            }
        } ?? .http1(configuration: http),
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "siwa"),
        onServerRunning: onServerRunning,
        logger: logger
    )
    app.addServices(
        StoreRefresher(
            store: store,
            revocations: revocations,
            issuer: issuer,
            users: users,
            interval: configuration.storeRefreshInterval,
            clock: clock,
            logger: logger
        )
    )
    app.addServices(lifecycle.services)
    if let sharedLimits { app.addServices(sharedLimits) }
    if let reloader = sealer.reloader(interval: configuration.dataKeyReloadInterval, logger: logger) {
        app.addServices(reloader)
    }
    if let tls {
        app.addServices(ServerTLS.Reloader(tls: tls, interval: configuration.tlsReloadInterval, logger: logger))
    }
    let metricsDeclarations = PolicedRoutes.Declarations()
    if let metrics, let listener = configuration.metricsListener {
        app.addServices(
            metricsApplication(
                metrics,
                listener: listener,
                limits: configuration,
                // Read at each scrape rather than kept current: each is one cheap look, and a scrape a minute is enough.
                beforeScrape: {
                    let dataKeyFile: String? =
                        switch sealer.source {
                        case .file(let path): path
                        case .setting: nil
                        }
                    await metrics.readOperationalGauges(store: store, dataKeyFile: dataKeyFile, now: clock.now)
                },
                routes: PolicedRoutes(
                    router: Router(context: SiwaRequestContext.self),
                    guarding: guarding,
                    declarations: metricsDeclarations
                ),
                logger: logger
            )
        )
    }
    app.addServices(
        Housekeeping(store: store, configuration: configuration.housekeeping, clock: clock, logger: logger)
    )
    return (app, registered, routes.declarations.all, metricsDeclarations.all)
}

/// The metrics listener's application: `GET /metrics` and `GET /healthz`, nothing else, on the listener's own address.
/// Its requests are neither logged nor counted: a scraper's every visit would fill the access log.
///
/// It is guarded like the public port (a head deadline, a body deadline, the idle timeout, the header size), with caps
/// of its own, and a port it cannot bind stops the process with an error that names the listener
/// (``MetricsListenerError``).
private func metricsApplication(
    _ metrics: ServerMetrics,
    listener: MetricsListener,
    limits configuration: AuthServerConfiguration,
    beforeScrape: @escaping @Sendable () async -> Void,
    routes: PolicedRoutes,
    logger: Logger
) -> some Service {
    routes.router.add(middleware: NoSniffMiddleware())
    routes.get("/metrics", access: .open) { _, _ -> Response in
        await beforeScrape()
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
        )
    }
    routes.get("/healthz", access: .open) { _, _ -> HTTPResponse.Status in .ok }
    var limits = configuration.connections
    limits.maximumConnections = listener.maximumConnections
    limits.maximumConnectionsPerAddress = listener.maximumConnectionsPerAddress
    let connections = ConnectionLimiter(limits: limits, trustedProxies: .none)
    let http = guardedHTTP1(configuration, connections)
    return MetricsListenerService(
        listener: listener,
        application: Application(
            router: routes.router,
            server: .http1(configuration: http),
            configuration: ApplicationConfiguration(
                address: .hostname(listener.host, port: listener.port),
                serverName: "siwa"
            ),
            onServerRunning: listener.onServerRunning,
            logger: logger
        )
    )
}

/// An HTTP/1 channel guarded by `connections` (caps, head and body deadlines), with the idle timeout and header size
/// of `configuration`: the public port's and the metrics listener's alike.
private func guardedHTTP1(
    _ configuration: AuthServerConfiguration,
    _ connections: ConnectionLimiter
) -> HTTP1Channel.Configuration {
    HTTP1Channel.Configuration(
        additionalChannelHandlers: [connections.makeHandler()],
        idleTimeout: configuration.idleTimeout.map { TimeAmount($0) },
        httpDecoderConfiguration: .init(
            maxHeaderFieldSize: configuration.maximumHeaderSize,
            maxHeaderListSize: configuration.maximumHeaderSize
        )
    )
}

/// The metrics listener's application as a service whose failure to listen names the listener.
private struct MetricsListenerService<Base: ApplicationProtocol>: Service {
    let listener: MetricsListener
    let application: Base

    func run() async throws {
        do {
            try await application.run()
        } catch let error as IOError {
            throw MetricsListenerError(host: listener.host, port: listener.port, underlying: error)
        }
    }
}

/// The metrics listener could not listen on its address: the port is taken (another siwa on this host, say) or the
/// address is not this host's.
public struct MetricsListenerError: Error, CustomStringConvertible {
    /// The listener's address.
    public var host: String
    /// The listener's port.
    public var port: Int
    /// What the system said.
    public var underlying: IOError

    public var description: String {
        let what = underlying.errnoCode == EADDRINUSE ? "the port is in use by another process" : "\(underlying)"
        return "the metrics listener cannot listen on \(host):\(port): \(what)"
    }
}
