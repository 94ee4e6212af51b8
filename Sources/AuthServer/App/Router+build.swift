import AppleSignIn
import Hummingbird
import NIOCore

extension AppServices {
    /// The public router: the middleware every request passes, then every part's routes, each registered with who
    /// may call it (``PolicedRoutes``) and guarded by the one ``RouteGuard``.
    /// - Parameter tls: whether the server answers https (answers then carry `Strict-Transport-Security`).
    /// - Returns: the router, and its routes with the access each declared and the guard that enforces it (which the
    ///   metrics listener's routes share).
    /// - Throws: what making a part throws (a web sign-in's configuration that does not hold together).
    func buildRouter(tls: Bool) throws -> (router: Router<SiwaRequestContext>, routes: PolicedRoutes) {
        let router = Router(context: SiwaRequestContext.self)
        // First: its request id is on every line the others log, and it logs the answer they make of every error.
        router.add(
            middleware: AccessLogMiddleware(
                trustedProxies: configuration.trustedProxies,
                metrics: metrics,
                logger: logger
            )
        )
        // Next: its span then covers the rest, and carries the request id the access log made.
        if let tracer {
            router.add(
                middleware: RequestTracingMiddleware(tracer: tracer, trustedProxies: configuration.trustedProxies)
            )
        }
        // Next, so that the errors the next one answers carry it too.
        if tls, let maxAge = configuration.hstsMaxAge {
            router.add(middleware: StrictTransportSecurityMiddleware(maxAge: maxAge))
        }
        router.add(middleware: NoSniffMiddleware())
        let routes = PolicedRoutes(router: router, guarding: routeGuard(), declarations: PolicedRoutes.Declarations())
        for provider in try routeProviders() { provider.addRoutes(to: routes) }
        return (router, routes)
    }

    /// The parts of the server that serve routes, in the order they register them: those the configuration turns on.
    /// - Throws: what making the web sign-in throws.
    func routeProviders() throws -> [any RouteProvider] {
        let compatibility = configuration.compatibility
        let web = try WebController(
            configuration: configuration,
            apple: apple,
            store: store,
            signIn: signIn,
            sessions: sessions,
            clock: clock
        )
        var providers: [any RouteProvider] = [
            SessionController(
                configuration: configuration,
                signIn: signIn,
                sessions: sessions,
                contractCookies: compatibility.serviceStack ? [Self.serviceStackCookies] : []
            ),
            web,
            lifecycle,
        ]
        if compatibility.serviceStack {
            providers.append(
                ServiceStackController(configuration: configuration, signIn: signIn, sessions: sessions, web: web)
            )
        }
        if compatibility.vaporTutorial {
            providers.append(
                VaporTutorialController(configuration: configuration, signIn: signIn, sessions: sessions, web: web)
            )
        }
        if compatibility.rentManager {
            providers.append(RentManagerController(configuration: configuration, signIn: signIn, sessions: sessions))
        }
        return providers + [openID(), operations()] + admin()
    }

    /// ServiceStack's access and refresh cookies, which siwa's own cookie routes end too when that contract is on.
    static let serviceStackCookies = (
        access: ServiceStackController.tokenCookie, refresh: ServiceStackController.refreshCookie
    )

    /// The one guard of every route: the cookies that carry a credential, the admin API's service tokens, the admin
    /// check and the rate limits (counted with the other instances when the store is shared).
    func routeGuard() -> RouteGuard {
        let web = SessionCookies(configuration: configuration)
        let serviceStack = configuration.compatibility.serviceStack
        let adminAccess = self.adminAccess
        let sharedLimits = self.sharedLimits
        return RouteGuard(
            sessions: sessions,
            configuration: configuration,
            cookieNames: [web.sessionName] + (serviceStack ? [Self.serviceStackCookies.access] : []),
            credentialCookieNames: [web.sessionName, web.refreshName]
                + (serviceStack ? [Self.serviceStackCookies.access, Self.serviceStackCookies.refresh] : []),
            serviceTokens: ServiceTokens(store: store, clock: clock),
            requireAdmin: { context in try await adminAccess.admin(context).subject },
            limiter: configuration.authRateLimit == nil && configuration.notificationRateLimit == nil
                ? nil
                : RateLimiter(configuration: configuration) { name, limit -> any RateLimitBuckets in
                    if let sharedLimits { return sharedLimits.buckets(name, limit: limit) }
                    return InMemoryRateLimitBuckets(limit: limit)
                }
        )
    }

    private func openID() -> OpenIDController {
        OpenIDController(
            configuration: configuration,
            store: store,
            sessions: sessions,
            audit: sessions.audit,
            clock: clock,
            consentTokens: FormToken(sealer: sealer, purpose: .clientConsent)
        )
    }

    private func operations() -> OperationsController {
        let compatibility = configuration.compatibility
        return OperationsController(
            store: store,
            issuer: issuer,
            appleHealth: appleHealth,
            appleCredentialsConfigured: appleClient != nil,
            home: HomePage(
                webSignIn: apple.servicesID != nil,
                contracts: [
                    compatibility.serviceStack ? "ServiceStack" : nil,
                    compatibility.vaporTutorial ? "Vapor tutorial" : nil,
                    compatibility.rentManager ? "Rent Manager" : nil,
                ].compactMap { $0 }
            ).page,
            openAPI: ByteBuffer(string: OpenAPIDocument.json)
        )
    }

    /// The admin API and the operator console, acting through the same ``AdminActions``.
    private func admin() -> [any RouteProvider] {
        let actions = AdminActions(
            access: adminAccess,
            store: store,
            sessions: sessions,
            deletions: lifecycle.deletions,
            clock: clock,
            logger: logger
        )
        return [
            AdminAPIController(
                configuration: configuration,
                access: adminAccess,
                store: store,
                actions: actions,
                clock: clock
            ),
            AdminConsoleController(
                configuration: configuration,
                access: adminAccess,
                store: store,
                actions: actions,
                formTokens: FormToken(sealer: sealer, purpose: .adminForms),
                keys: AdminConsoleController.Keys(
                    appleHealth: appleHealth,
                    appleCredentialsConfigured: appleClient != nil,
                    sealer: sealer
                ),
                clock: clock,
                webhookHealth: webhookHealth
            ),
        ]
    }
}
