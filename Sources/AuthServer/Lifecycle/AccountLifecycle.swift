import AccountStore
import AppleSignIn
import Hummingbird
import Logging
import ServiceLifecycle

/// The account-lifecycle parts of one application, assembled once by `buildApplication`: the consent checker used on
/// refresh, the deletion service, the routes and the background services.
struct AccountLifecycle: Sendable {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let verifier: IdentityTokenVerifier
    let revocations: RevocationList
    let clock: any WallClock
    let logger: Logger
    /// `nil` without Apple credentials: no token is kept, so there is nothing to validate.
    let appleConsent: AppleConsentChecker?
    let deletions: AccountDeletionService

    init(
        configuration: AuthServerConfiguration,
        store: any AccountStore,
        verifier: IdentityTokenVerifier,
        apple: AppleAPIClient?,
        sealer: DataSealer,
        revocations: RevocationList,
        clock: any WallClock,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.verifier = verifier
        self.revocations = revocations
        self.clock = clock
        self.logger = logger
        self.appleConsent = apple.map { apple in
            AppleConsentChecker(
                configuration: configuration.lifecycle,
                store: store,
                apple: apple,
                sealer: sealer,
                revocations: revocations,
                clock: clock,
                logger: logger
            )
        }
        self.deletions = AccountDeletionService(
            configuration: configuration.lifecycle,
            store: store,
            apple: apple,
            sealer: sealer,
            clock: clock,
            logger: logger
        )
    }

    /// `POST /auth/apple/notifications` and `DELETE /api/me`.
    func addRoutes(
        to auth: RouterGroup<SiwaRequestContext>,
        api: RouterGroup<SiwaRequestContext>,
        sessions: SessionController
    ) {
        AccountLifecycleController(
            configuration: configuration,
            store: store,
            verifier: verifier,
            deletions: deletions,
            sessions: sessions,
            revocations: revocations,
            clock: clock
        ).addRoutes(to: auth, api: api)
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
        if let appleConsent {
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
