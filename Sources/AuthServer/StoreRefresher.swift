import AccountStore
import AppleSignIn
import Logging
import ServiceLifecycle

/// Keeps the revocation list and the signing keys current from the store, every few seconds, until shutdown.
struct StoreRefresher: Service {
    let store: any AccountStore
    let revocations: RevocationList
    let issuer: AccessTokenIssuer
    let users: UserCache
    let interval: Duration
    let clock: any WallClock
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await revocations.refresh(from: store, now: clock.now)
                try await issuer.reload()
                try await users.refresh(from: store, now: clock.now)
            } catch {
                logger.warning("refreshing revocations and keys from the store failed", metadata: ["error": "\(error)"])
            }
            // Shutdown ends the wait at once rather than after the interval.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
