public import AccountStore
public import AppleSignIn
public import Crypto
import HTTPTypes
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore

/// Builds the siwa server: the canonical API, well-known keys and health routes, over an injected store and HTTP
/// transport. The CLI and the tests call this same function.
/// - Parameters:
///   - configuration: the server's own settings.
///   - apple: client ids, credentials (for code exchange) and Apple's base URL.
///   - store: accounts and sessions.
///   - transport: the HTTP client towards Apple.
///   - dataKey: the AES-256 key that seals Apple refresh tokens and signing keys at rest.
///   - clock: wall clock.
///   - host: address to listen on.
///   - port: port (0 for any free one).
///   - logger: request and event logs (never tokens).
public func buildApplication(
    configuration: AuthServerConfiguration,
    apple: AppleSignInConfiguration,
    store: any AccountStore,
    transport: any HTTPTransport,
    dataKey: SymmetricKey,
    clock: any WallClock = SystemWallClock(),
    host: String = "127.0.0.1",
    port: Int = 8080,
    logger: Logger = Logger(label: "siwa")
) async throws -> some ApplicationProtocol {
    let sealer = DataSealer(key: dataKey)
    // One registry per application, never the global `MetricsSystem`: tests run many applications in one process.
    let metrics = configuration.metricsEnabled ? ServerMetrics() : nil
    let keySource: any AppleKeySource = AppleKeysEndpoint(
        baseURL: apple.appleBaseURL,
        transport: transport,
        logger: logger
    )
    let keys = AppleKeyCache(
        source: metrics.map { CountingKeySource(source: keySource, metrics: $0) } ?? keySource,
        clock: clock,
        logger: logger
    )
    let verifier = IdentityTokenVerifier(configuration: apple, keys: keys, clock: clock)
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
            logger: logger
        )
    }
    let issuer = try await AccessTokenIssuer(configuration: configuration, store: store, sealer: sealer, clock: clock)
    let revocations = RevocationList(retention: configuration.accessTokenLifetime + 120)
    let users = UserCache(capacity: configuration.userCacheCapacity)
    try await users.refresh(from: store, now: clock.now)
    try await revocations.refresh(from: store, now: clock.now)
    let signIn = SignInService(
        configuration: configuration,
        store: store,
        verifier: verifier,
        apple: appleClient,
        issuer: issuer,
        sealer: sealer,
        clock: clock,
        logger: logger,
        metrics: metrics,
        userCache: users
    )
    let lifecycle = AccountLifecycle(
        configuration: configuration,
        store: store,
        verifier: verifier,
        apple: appleClient,
        sealer: sealer,
        revocations: revocations,
        clock: clock,
        logger: logger
    )

    let router = Router(context: SiwaRequestContext.self)
    if let metrics { router.add(middleware: MetricsMiddleware(metrics: metrics)) }
    router.add(middleware: LogRequestsMiddleware(.debug, redactHeaders: [.authorization, .cookie, .setCookie]))
    let auth = router.group("/auth")
    if let limit = configuration.authRateLimit { auth.add(middleware: RateLimitMiddleware(limit: limit)) }
    let sessions = SessionController(
        configuration: configuration,
        signIn: signIn,
        store: store,
        issuer: issuer,
        revocations: revocations,
        users: users,
        clock: clock,
        appleConsent: lifecycle.appleConsent
    )
    sessions.addRoutes(to: auth, api: router.group("/api"))
    let web = try WebController(
        configuration: configuration,
        apple: apple,
        store: store,
        signIn: signIn,
        sessions: sessions,
        clock: clock
    )
    web.addRoutes(to: router, auth: auth)
    lifecycle.addRoutes(to: auth, api: router.group("/api"), sessions: sessions)
    let compatibility = configuration.compatibility
    if compatibility.serviceStack {
        ServiceStackController(sessions: sessions, web: web, compatibility: compatibility)
            .addRoutes(to: router, auth: auth)
    }
    if compatibility.vaporTutorial { VaporTutorialController(sessions: sessions, web: web).addRoutes(to: router) }
    if compatibility.rentManager {
        RentManagerController(sessions: sessions, compatibility: compatibility).addRoutes(to: router)
    }

    router.get("/.well-known/jwks.json") { _, _ -> Response in
        Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: ByteBuffer(bytes: issuer.jwks()))
        )
    }
    if let metrics {
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
            )
        }
    }
    router.get("/healthz") { _, _ -> HTTPResponse.Status in .ok }
    router.get("/readyz") { _, _ -> Response in
        do {
            try await store.ping()
            return Response(status: .ok)
        } catch {
            throw AuthServerError(.serviceUnavailable, "database_unavailable", "the database cannot be reached")
        }
    }

    var app = Application(
        router: router,
        server: .http1(
            configuration: HTTP1Channel.Configuration(
                idleTimeout: configuration.idleTimeout.map { TimeAmount($0) },
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: configuration.maximumHeaderSize,
                    maxHeaderListSize: configuration.maximumHeaderSize
                )
            )
        ),
        configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "siwa"),
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
    app.addServices(
        Housekeeping(store: store, configuration: configuration.housekeeping, clock: clock, logger: logger)
    )
    return app
}
