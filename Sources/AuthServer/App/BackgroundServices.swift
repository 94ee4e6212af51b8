import AccountStore
import AppleSignIn
import Hummingbird
import NIOCore
import ServiceLifecycle

extension AppServices {
    /// Every service that runs beside the HTTP server, assembled in this one place: the store refresher (revoked
    /// sessions, signing keys, users), the account lifecycle's (Apple's queued revocations, consent checks), the
    /// shared limits' reconciliation, the data keys' and the TLS certificate's reloads, the metrics listener, the
    /// housekeeping and the webhook deliveries.
    /// - Parameters:
    ///   - tls: the certificate to reload, when the server answers https.
    ///   - guarding: the public routes' guard, which the metrics listener's routes share.
    /// - Returns: the services, and the access of the metrics listener's routes (empty without one).
    func backgroundServices(
        tls: ServerTLS?,
        guarding: RouteGuard
    ) -> (services: [any Service], metricsPolicies: [RegisteredRoute: RouteAccess]) {
        var services: [any Service] = [
            StoreRefresher(
                store: store,
                revocations: revocations,
                issuer: issuer,
                users: users,
                interval: configuration.storeRefreshInterval,
                clock: clock,
                logger: logger
            )
        ]
        services += lifecycle.services
        if let sharedLimits { services.append(sharedLimits) }
        if let reloader = sealer.reloader(interval: configuration.dataKeyReloadInterval, logger: logger) {
            services.append(reloader)
        }
        if let tls {
            services.append(ServerTLS.Reloader(tls: tls, interval: configuration.tlsReloadInterval, logger: logger))
        }
        let metricsDeclarations = PolicedRoutes.Declarations()
        if let metrics, let listener = configuration.metricsListener {
            let routes = PolicedRoutes(
                router: Router(context: SiwaRequestContext.self),
                guarding: guarding,
                declarations: metricsDeclarations
            )
            services.append(metricsApplication(metrics, listener: listener, routes: routes))
        }
        services.append(
            Housekeeping(store: store, configuration: configuration.housekeeping, clock: clock, logger: logger)
        )
        let deliveryEndpoints = configuration.deliveryEndpoints
        if let transport = configuration.webhooks.transport, !deliveryEndpoints.isEmpty {
            services.append(
                WebhookDeliverer(
                    configuration: configuration.webhooks,
                    endpoints: deliveryEndpoints,
                    transport: transport,
                    store: store,
                    clock: clock,
                    metrics: metrics,
                    logger: logger,
                    audit: sessions.audit,
                    health: webhookHealth,
                    logoutTokens: BackchannelLogoutTokens(issuer: issuer, configuration: configuration)
                )
            )
        }
        return (services, metricsDeclarations.all)
    }

    /// The metrics listener's application: `GET /metrics` and `GET /healthz`, nothing else, on the listener's own
    /// address. Its requests are neither logged nor counted: a scraper's every visit would fill the access log.
    ///
    /// It is guarded like the public port (a head deadline, a body deadline, the idle timeout, the header size), with
    /// caps of its own, and a port it cannot bind stops the process with an error that names the listener
    /// (``MetricsListenerError``).
    private func metricsApplication(
        _ metrics: ServerMetrics,
        listener: MetricsListener,
        routes: PolicedRoutes
    ) -> some Service {
        let (store, clock, webhooks) = (self.store, self.clock, configuration.deliveryEndpoints)
        let dataKeyFile: String? =
            switch sealer.source {
            case .file(let path): path
            case .setting: nil
            }
        routes.router.add(middleware: NoSniffMiddleware())
        routes.get("/metrics", access: .open) { _, _ -> Response in
            // Read at each scrape rather than kept current: each is one cheap look, and a scrape a minute is enough.
            await metrics.readOperationalGauges(
                store: store,
                dataKeyFile: dataKeyFile,
                webhooks: webhooks,
                now: clock.now
            )
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
        return MetricsListenerService(
            listener: listener,
            application: Application(
                router: routes.router,
                server: .http1(configuration: guardedHTTP1(configuration, connections)),
                configuration: ApplicationConfiguration(
                    address: .hostname(listener.host, port: listener.port),
                    serverName: "siwa"
                ),
                onServerRunning: listener.onServerRunning,
                logger: logger
            )
        )
    }
}
