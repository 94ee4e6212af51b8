#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension IdentityTokenVerifier {
    /// The largest notification body accepted.
    public static let maximumNotificationBodySize = 64 * 1024

    /// Verifies the body Apple POSTs to your notification URL: `{"payload": "<JWT>"}`.
    ///
    /// The JWT is checked like an identity token (RS256 by Apple's keys, `iss`, `aud` among the client ids, `exp`
    /// and `iat`); its `events` claim, a JSON string, is decoded into a typed event. Unknown event types decode as
    /// such and are not an error.
    /// - Parameter body: the request body, at most ``maximumNotificationBodySize`` bytes.
    /// - Returns: the verified notification.
    /// - Throws: ``AppleSignInError`` naming the check that failed (``AppleSignInError/Code/malformed`` for the body).
    public func verifyNotification(body: some Collection<UInt8>) async throws(AppleSignInError) -> ServerNotification {
        guard body.count <= Self.maximumNotificationBodySize else {
            throw .malformed("notification body is larger than \(Self.maximumNotificationBodySize) bytes")
        }
        let document: JSONValue
        do {
            document = try JSONReader.parseObject(body)
        } catch {
            throw .malformed("notification body is not a JSON object (\(error))")
        }
        guard let payload = document["payload"]?.stringValue else {
            throw .malformed("notification body has no 'payload' string")
        }
        return try await verifyNotification(payload: payload)
    }

    /// Verifies the JWT of a notification (the `payload` field).
    /// - Parameter payload: the JWT, checked as ``verifyNotification(body:)`` describes.
    /// - Returns: the verified notification.
    /// - Throws: ``AppleSignInError`` naming the check that failed (``AppleSignInError/Code/malformed`` for an
    ///   `events` claim that is not a JSON string holding an event with `type`, `sub` and `event_time`).
    public func verifyNotification(payload: String) async throws(AppleSignInError) -> ServerNotification {
        let progress = try await AppleJWTCheck.verify(
            payload,
            AppleJWTCheck.notificationChecks,
            context: checkContext(describes: false)
        )
        guard let notification = progress.notification else { throw .malformed("the payload was not fully checked") }
        return notification
    }
}

extension ServerNotificationEvent {
    /// Decodes the `events` claim: a JSON *string* holding one event object.
    init(eventsClaim: JSONValue?) throws(AppleSignInError) {
        guard let eventsText = eventsClaim?.stringValue else {
            throw .malformed("claim 'events' is missing or not a JSON string")
        }
        let events: JSONValue
        do {
            events = try JSONReader.parseObject(Array(eventsText.utf8))
        } catch {
            throw .malformed("claim 'events' does not hold a JSON object (\(error))")
        }
        guard let type = events["type"]?.stringValue, !type.isEmpty else { throw .malformed("event has no 'type'") }
        guard let sub = events["sub"]?.stringValue, !sub.isEmpty else { throw .malformed("event has no 'sub'") }
        guard let milliseconds = events["event_time"]?.doubleValue, milliseconds.isFinite else {
            throw .malformed("event has no numeric 'event_time'")
        }
        self.init(
            type: EventType(rawValue: type),
            sub: AppleUserID(sub),
            email: try events.optionalString("email"),
            isPrivateEmail: try events.optionalBool("is_private_email"),
            eventTime: Date(timeIntervalSince1970: milliseconds / 1000)
        )
    }
}
