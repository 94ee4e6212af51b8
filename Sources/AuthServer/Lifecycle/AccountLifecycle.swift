import AccountStore
import AppleSignIn
import Hummingbird
import Logging
import ServiceLifecycle

/// The account-lifecycle parts of one application, assembled once by `buildApplication`: the deletion service, the
/// routes and the background services (the revocation worker, and the Apple token validator of ``SessionService``).
struct AccountLifecycle: RouteProvider {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let verifier: IdentityTokenVerifier
    let sessions: SessionService
    let clock: any WallClock
    let logger: Logger
    let deletions: AccountDeletionService

    init(
        configuration: AuthServerConfiguration,
        store: any AccountStore,
        verifier: IdentityTokenVerifier,
        apple: AppleAPIClient?,
        sealer: DataSealer,
        sessions: SessionService,
        clock: any WallClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.verifier = verifier
        self.sessions = sessions
        self.clock = clock
        self.logger = logger
        self.deletions = AccountDeletionService(
            configuration: configuration.lifecycle,
            store: store,
            apple: apple,
            sealer: sealer,
            clock: clock,
            logger: logger,
            audit: sessions.audit
        )
    }

    /// `POST /auth/apple/notifications` and `DELETE /api/me`.
    func addRoutes(to routes: PolicedRoutes) {
        AccountLifecycleController(
            configuration: configuration,
            store: store,
            verifier: verifier,
            deletions: deletions,
            sessions: sessions,
            audit: sessions.audit,
            clock: clock
        ).addRoutes(to: routes)
    }

    /// The revocation worker and, with Apple credentials, the token validator.
    var services: [any Service] {
        var services: [any Service] = [
            AppleRevocationWorker(
                deletions: deletions,
                interval: configuration.lifecycle.revocationPollInterval,
                logger: logger
            )
        ]
        if let appleConsent = sessions.appleConsent {
            services.append(
                AppleTokenValidator(
                    checker: appleConsent,
                    interval: configuration.lifecycle.appleValidationPollInterval,
                    logger: logger
                )
            )
        }
        return services
    }
}
