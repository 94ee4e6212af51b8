import Logging
import ServiceLifecycle

/// Walks the users whose Apple refresh token is due for validation (at most once per configured interval), in small
/// batches, and validates each at Apple; a revoked token ends the user's consent and sessions.
struct AppleTokenValidator: Service {
    let checker: AppleConsentChecker
    let interval: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let validated = try await checker.validateDueTokens()
                if validated > 0 { logger.debug("validated Apple tokens", metadata: ["count": "\(validated)"]) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("validating Apple tokens failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
