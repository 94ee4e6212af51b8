import AccountStore
import AppleSignIn
import Logging

/// Appends events to the store's audit log for the services that do what they record: sessions ended,
/// sign-ins refused, refresh-token reuse, accounts disabled, enabled and deleted, Apple's notifications and
/// revocations, team-transfer steps. (A sign-in that starts a session is recorded by the store itself.)
///
/// Recording never fails what it records: a failed append is logged (type and error code only) and counted in
/// `siwa_audit_write_failures_total`, and the action stands.
///
/// - Warning: Never a token, code, key or hash in an event: ids and reason codes only (see ``AuditEvent``).
struct AuditLog: Sendable {
    let store: any AccountStore
    let clock: any WallClock
    let logger: Logger
    /// Counts failed appends (`nil`: counts nothing).
    let metrics: ServerMetrics?

    init(store: any AccountStore, clock: any WallClock, logger: Logger, metrics: ServerMetrics? = nil) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    /// Records one event, timed now.
    func append(
        _ type: AuditEventType,
        userID: UserID? = nil,
        actor: AuditActor,
        channel: SignInChannel? = nil,
        clientID: ClientID? = nil,
        reason: String? = nil,
        sessionID: SessionID? = nil,
        details: [String: String] = [:]
    ) async {
        let event = AuditEvent(
            time: clock.now,
            type: type,
            userID: userID,
            actor: actor,
            channel: channel,
            clientID: clientID,
            reason: reason,
            sessionID: sessionID,
            details: details
        )
        do {
            try await store.appendAuditEvent(event)
        } catch {
            metrics?.auditWriteFailed()
            logger.warning(
                "recording an audit event failed; the action stands",
                metadata: ["type": "\(type.rawValue)", "error": "\(error.code)"]
            )
        }
    }
}
