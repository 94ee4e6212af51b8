import AppleSignIn
import Logging
import ServiceLifecycle

/// Retries the queued revocations of deleted accounts' Apple tokens every few seconds until Apple confirms them.
/// The queue lives in the store, so a restart (or another instance) carries on where this one stopped.
struct AppleRevocationWorker: Service {
    let deletions: AccountDeletionService
    let interval: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let revoked = try await deletions.retryDueRevocations()
                if revoked > 0 { logger.info("revoked queued Apple tokens", metadata: ["count": "\(revoked)"]) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("retrying Apple revocations failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
