#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Settings of the periodic purge of rows that can no longer be used.
public struct HousekeepingConfiguration: Sendable {
    /// How often expired rows are purged (default 1 hour); `nil` turns the purge off.
    public var purgeInterval: Duration?
    /// Seconds that refresh tokens and revoked sessions are kept after their expiry or revocation, and deletion
    /// records after the deletion (default 7 days): long enough for reuse detection to name a stolen token and for
    /// every instance to see each deletion.
    public var retention: TimeInterval
    /// Seconds the audit log keeps an event (`SIWA_AUDIT_RETENTION_DAYS`, default 90 days); each purge deletes older
    /// ones.
    public var auditRetention: TimeInterval
    /// Seconds the events feed keeps a lifecycle event (`SIWA_EVENT_RETENTION_DAYS`, default 30 days): how long the
    /// app's backend can be away and still catch up from its cursor.
    public var eventRetention: TimeInterval

    public init(
        purgeInterval: Duration? = .seconds(3600),
        retention: TimeInterval = 7 * 86_400,
        auditRetention: TimeInterval = 90 * 86_400,
        eventRetention: TimeInterval = 30 * 86_400
    ) {
        self.purgeInterval = purgeInterval
        self.retention = retention
        self.auditRetention = auditRetention
        self.eventRetention = eventRetention
    }
}
