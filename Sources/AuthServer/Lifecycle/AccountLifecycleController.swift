import AccountStore
import AppleSignIn
import Crypto
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Apple's server-to-server notifications (`POST /auth/apple/notifications`) and account deletion
/// (`DELETE /api/me`).
struct AccountLifecycleController: RouteProvider {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let verifier: IdentityTokenVerifier
    let deletions: AccountDeletionService
    let sessions: SessionService
    /// The server's audit log: Apple's notifications.
    let audit: AuditLog
    let clock: any WallClock

    /// The answer to Apple.
    struct NotificationAnswer: ResponseEncodable {
        /// `applied`, `unknown_user`, `ignored` or `duplicate`.
        var outcome: String
    }

    func addRoutes(to routes: PolicedRoutes) {
        let (auth, api) = (routes.group("/auth"), routes.group("/api"))
        auth.post("/apple/notifications", access: .checkedByHandler(.appleNotification), use: notification)
        api.delete("/me", access: .session(), use: deleteMe)
    }

    /// Verifies and applies one notification; each event applies once. Never logs the payload.
    @Sendable func notification(_ request: Request, context: SiwaRequestContext) async throws -> NotificationAnswer {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: IdentityTokenVerifier.maximumNotificationBodySize)
        } catch {
            throw AuthServerError(
                .contentTooLarge,
                AuthServerError.Code.bodyTooLarge,
                "the notification body is larger than \(IdentityTokenVerifier.maximumNotificationBodySize) bytes"
            )
        }
        let notification: ServerNotification
        do {
            notification = try await verifier.verifyNotification(body: body.readableBytesView)
        } catch {
            context.logger.info(
                "Apple notification refused",
                metadata: ["check": "\(error.code)", "reason": "\(error.reason)"]
            )
            throw Self.httpError(error)
        }
        let event = notification.event
        let action = Self.action(for: event.type, deletionMode: configuration.lifecycle.deletionMode)
        let now = clock.now
        let outcome = try await store.applyAppleNotification(
            AppleNotificationRecord(
                eventKey: Self.eventKey(event),
                type: event.type.rawValue,
                appleUserID: event.sub,
                userID: nil,
                eventTime: event.eventTime,
                receivedAt: now,
                outcome: ""
            ),
            action: action,
            now: now
        )
        switch outcome {
        case .applied(let record, let endedSessions, let deletedUser):
            await sessions.notificationApplied(
                endedSessions: endedSessions,
                userID: record.userID,
                deletedUser: deletedUser,
                type: record.type
            )
            await recordInAuditLog(record, deletedUser: deletedUser)
            context.logger.info(
                "Apple notification applied",
                metadata: [
                    "type": "\(record.type)", "outcome": "\(record.outcome)",
                    "user": "\(record.userID.map { "\($0)" } ?? "-")", "sessions_ended": "\(endedSessions.count)",
                ]
            )
            return NotificationAnswer(outcome: record.outcome)
        case .duplicate(let record):
            context.logger.info("Apple notification already applied", metadata: ["type": "\(record.type)"])
            await audit.append(
                .appleNotificationIgnored,
                userID: record.userID,
                actor: .apple,
                reason: "duplicate",
                details: ["type": record.type]
            )
            return NotificationAnswer(outcome: "duplicate")
        }
    }

    /// Records a notification the store took: applied (and the account it deleted, by Apple), or ignored and why
    /// (`stale`, `unknown_user`, `ignored` for a type that changes nothing).
    private func recordInAuditLog(_ record: AppleNotificationRecord, deletedUser: UserID?) async {
        guard record.outcome == "applied" else {
            await audit.append(
                .appleNotificationIgnored,
                userID: record.userID,
                actor: .apple,
                reason: record.outcome,
                details: ["type": record.type]
            )
            return
        }
        await audit.append(
            .appleNotificationApplied,
            userID: record.userID,
            actor: .apple,
            details: ["type": record.type]
        )
        if let deletedUser {
            await audit.append(
                .accountDeleted,
                userID: deletedUser,
                actor: .apple,
                details: ["mode": configuration.lifecycle.deletionMode.rawValue]
            )
        }
    }

    /// Deletes the signed-in user's account (bearer, or cookie with the CSRF check) and revokes their Apple token at Apple (queued when Apple is down).
    @Sendable func deleteMe(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        // Bearer, or the session cookie with the CSRF check (a DELETE changes state).
        let (claims, byCookie) = try context.requireSession()
        guard let deletion = try await deletions.deleteAccount(claims.userID, by: .user) else {
            throw AuthServerError.unauthorized(AuthServerError.Code.unknownUser, "the account no longer exists")
        }
        sessions.forgetDeletedAccount(claims.userID, endedSessions: deletion.endedSessions)
        var response = Response(status: .noContent)
        if byCookie { SessionCookies(configuration: configuration).clear(on: &response) }
        return response
    }

    /// What an event type does to the account.
    static func action(
        for type: ServerNotificationEvent.EventType,
        deletionMode: AccountDeletionMode
    ) -> AppleNotificationAction {
        switch type {
        case .consentRevoked: .endConsent
        case .accountDelete: .deleteAccount(deletionMode)
        case .emailDisabled: .setEmailForwarding(false)
        case .emailEnabled: .setEmailForwarding(true)
        default: .none
        }
    }

    /// Identifies an event across Apple's deliveries: hex SHA-256 of `type|sub|event_time` (milliseconds).
    static func eventKey(_ event: ServerNotificationEvent) -> String {
        let milliseconds = Int64((event.eventTime.timeIntervalSince1970 * 1000).rounded())
        let digest = SHA256.hash(data: Array("\(event.type.rawValue)|\(event.sub.rawValue)|\(milliseconds)".utf8))
        return digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// A refused notification: 400 naming the check (so Apple does not retry a forgery); 503 when Apple's keys
    /// cannot be fetched (Apple retries later).
    static func httpError(_ error: AppleSignInError) -> AuthServerError {
        AuthServerError.mapping(error) { check, reason in AuthServerError.badRequest("notification_\(check)", reason) }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
