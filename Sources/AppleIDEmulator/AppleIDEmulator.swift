public import Foundation
public import Hummingbird
public import Logging
public import NIOCore

/// A local stand-in for appleid.apple.com: keys, the authorize page, token, revoke and team-transfer endpoints, plus a
/// control API for tests and developers. Point a server's Apple base URL at it and every Sign in with Apple flow runs
/// on this machine with no Apple account. A console at `/` shows its Apple IDs and drives it from a browser.
public struct AppleIDEmulator: Sendable {
    let state: EmulatorState
    let delivery: (any NotificationDelivery)?
    let logger: Logger
    let hostNames: EmulatorHostNames

    /// - Parameters:
    ///   - configuration: teams, keys and clients.
    ///   - delivery: how notifications reach developers' servers (`nil`: not delivered, answered with 503).
    ///   - stateFile: a JSON file to keep state across restarts; memory only when `nil`.
    ///   - now: the wall clock.
    ///   - logger: request outcomes; never tokens.
    /// - Throws: ``EmulatorConfigurationError`` for a configuration the emulator cannot run with or Apple would refuse
    ///   (``EmulatorConfiguration/validate()``), or an error reading `stateFile`.
    public init(
        configuration: EmulatorConfiguration,
        delivery: (any NotificationDelivery)?,
        stateFile: String? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "siwa.emulator")
    ) async throws {
        self.state = try await EmulatorState(
            configuration: configuration,
            now: now,
            stateFile: stateFile,
            logger: logger
        )
        self.delivery = delivery
        self.logger = logger
        self.hostNames = EmulatorHostNames(configuration)
    }

    /// The emulator as a Hummingbird application listening on `host:port`.
    /// - Parameter onServerRunning: called once the port is bound and the emulator accepts connections.
    public func application(
        host: String = "127.0.0.1",
        port: Int = 9090,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "siwa-emulator"),
            onServerRunning: onServerRunning,
            logger: logger
        )
    }

    /// Every route.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        addAppleRoutes(to: router)
        addControlRoutes(to: router)
        addConsoleRoutes(to: router)
        return router
    }
}
