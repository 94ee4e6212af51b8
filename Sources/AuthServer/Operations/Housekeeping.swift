public import AccountStore
public import AppleSignIn
public import Logging
public import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Purges the store's expired rows (server nonces, web states, refresh tokens, revoked sessions, deletion records, the
/// shared limits' counts of past windows), the audit events older than ``HousekeepingConfiguration/auditRetention``
/// and the lifecycle events older than ``HousekeepingConfiguration/eventRetention`` every interval until shutdown.
/// Every instance may run it: a purge that finds nothing changes nothing.
public struct Housekeeping: Service {
    let store: any AccountStore
    let configuration: HousekeepingConfiguration
    let clock: any WallClock
    let logger: Logger

    public init(
        store: any AccountStore,
        configuration: HousekeepingConfiguration,
        clock: any WallClock,
        logger: Logger
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    /// One purge; returns what it removed of the expired rows (the audit events it purged are logged).
    @discardableResult
    public func purge() async throws(StoreError) -> PurgeResult {
        let now = clock.now
        let result = try await store.purgeExpired(now: now, retention: configuration.retention)
        if let counters = store.sharedCounters() {
            let counts = try await counters.purge(expiredBefore: now)
            if counts > 0 { logger.info("purged expired shared counts", metadata: ["shared_counts": "\(counts)"]) }
        }
        let auditEvents = try await store.purgeAuditEvents(
            before: now.addingTimeInterval(-configuration.auditRetention)
        )
        if auditEvents > 0 {
            logger.info("purged old audit events", metadata: ["audit_events": "\(auditEvents)"])
        }
        let lifecycleEvents = try await store.purgeLifecycleEvents(
            before: now.addingTimeInterval(-configuration.eventRetention)
        )
        if lifecycleEvents > 0 {
            logger.info("purged old lifecycle events", metadata: ["lifecycle_events": "\(lifecycleEvents)"])
        }
        if result.total > 0 {
            logger.info(
                "purged expired rows",
                metadata: [
                    "server_nonces": "\(result.serverNonces)", "web_states": "\(result.webFlowStates)",
                    "refresh_tokens": "\(result.refreshTokens)", "sessions": "\(result.sessions)",
                    "deletion_records": "\(result.accountDeletions)",
                ]
            )
        }
        return result
    }

    public func run() async throws {
        guard let interval = configuration.purgeInterval else { return }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
            do {
                try await purge()
            } catch {
                logger.warning("purging expired rows failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
