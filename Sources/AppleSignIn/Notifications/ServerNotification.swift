#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A verified server-to-server notification from Apple.
public struct ServerNotification: Sendable, Hashable {
    /// `jti`: Apple's id of this notification; apply each once.
    public var id: String
    /// `aud`: the client id (primary App ID) it was sent for.
    public var aud: ClientID
    /// `iat`.
    public var issuedAt: Date
    /// The event (decoded from the `events` claim, which Apple sends as a JSON string).
    public var event: ServerNotificationEvent

    /// Makes a notification from its parts; ``IdentityTokenVerifier/verifyNotification(payload:)`` makes them from
    /// Apple's JWT.
    /// - Parameters:
    ///   - id: `jti`.
    ///   - aud: `aud`.
    ///   - issuedAt: `iat`.
    ///   - event: the decoded `events` claim.
    public init(id: String, aud: ClientID, issuedAt: Date, event: ServerNotificationEvent) {
        self.id = id
        self.aud = aud
        self.issuedAt = issuedAt
        self.event = event
    }
}

/// The event inside a server-to-server notification.
public struct ServerNotificationEvent: Sendable, Hashable {
    /// What happened.
    public struct EventType: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        /// Wraps an event type as Apple names it; unknown names are kept as they are.
        /// - Parameter rawValue: the event's `type`, such as `consent-revoked`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The user turned off mail forwarding to their private relay address.
        public static let emailDisabled = EventType(rawValue: "email-disabled")
        /// The user turned mail forwarding back on.
        public static let emailEnabled = EventType(rawValue: "email-enabled")
        /// The user stopped using Sign in with Apple with the app.
        public static let consentRevoked = EventType(rawValue: "consent-revoked")
        /// The user deleted their Apple Account.
        public static let accountDelete = EventType(rawValue: "account-delete")
        /// Whether this is one of the four types Apple documents (others are kept, not refused).
        public var isKnown: Bool { [.emailDisabled, .emailEnabled, .consentRevoked, .accountDelete].contains(self) }
        public var description: String { rawValue }
    }

    public var type: EventType
    /// The user.
    public var sub: AppleUserID
    /// The relay address concerned (email events).
    public var email: String?
    /// `is_private_email` (email events; a string or a boolean from Apple).
    public var isPrivateEmail: Bool?
    /// `event_time`, which Apple sends in milliseconds.
    public var eventTime: Date

    /// Makes an event from its parts.
    /// - Parameters:
    ///   - type: `type`.
    ///   - sub: `sub`, the user.
    ///   - email: `email`, for the email events.
    ///   - isPrivateEmail: `is_private_email`, for the email events.
    ///   - eventTime: `event_time`.
    public init(type: EventType, sub: AppleUserID, email: String? = nil, isPrivateEmail: Bool? = nil, eventTime: Date) {
        self.type = type
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.eventTime = eventTime
    }
}
