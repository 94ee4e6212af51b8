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
    sharedLimits: SharedLimits? = nil,
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
    let services = try await AppServices.build(
        configuration: configuration,
        apple: apple,
        store: store,
        transport: transport,
        sealer: sealer,
        sharedLimits: sharedLimits,
        clock: clock,
        logger: logger.addingSiwaRequestID(),
        tracer: tracer
    )
    let (router, routes) = try services.buildRouter(tls: tls != nil)
    let connections = ConnectionLimiter(
        limits: configuration.connections,
        trustedProxies: configuration.trustedProxies,
        metrics: services.metrics
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
        logger: services.logger
    )
    let background = services.backgroundServices(tls: tls, guarding: routes.guarding)
    for service in background.services { app.addServices(service) }
    return (app, registered, routes.declarations.all, background.metricsPolicies)
}

/// An HTTP/1 channel guarded by `connections` (caps, head and body deadlines), with the idle timeout and header size
/// of `configuration`: the public port's and the metrics listener's alike.
func guardedHTTP1(
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
struct MetricsListenerService<Base: ApplicationProtocol>: Service {
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
