public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension AuditEvent {
    /// A new event id: a version-7 UUID (RFC 9562: the Unix time in milliseconds, then a counter, then random bits),
    /// so that ids made later in this process sort after earlier ones, also within one millisecond. The log lists
    /// events by time, then id: events written in the same millisecond (an account's creation and its first
    /// sign-in) come in the order they happened, not at random.
    public static func newID() -> UUID { .timeOrdered() }
}

/// What an audit event records. The raw values are stored and never change; a new kind of event is a new case.
public enum AuditEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A sign-in that started a session (``AuditEvent/details`` `account`: `new` or `returning`). The store records
    /// it itself, with the sign-in (``AccountStore/signIn(_:startingSession:now:)``).
    case signIn = "sign_in"
    /// A sign-in refused; ``AuditEvent/reason`` says why (`expired`, `audience`, `signature`, `nonce`,
    /// `account_disabled`, …).
    case signInRefused = "sign_in_refused"
    /// A rotated refresh token presented again: its session was ended.
    case refreshTokenReuse = "refresh_token_reuse"
    /// A session ended; ``AuditEvent/actor`` says by whom (the user, an admin, Apple, the system on reuse).
    case sessionEnded = "session_ended"
    /// An account was created (by its first sign-in, which the store records itself).
    case accountCreated = "account_created"
    case accountDisabled = "account_disabled"
    case accountEnabled = "account_enabled"
    case accountDeleted = "account_deleted"
    /// A server-to-server notification from Apple changed an account (details: `type`).
    case appleNotificationApplied = "apple_notification_applied"
    /// A notification from Apple that changed nothing (details: `type`; ``AuditEvent/reason``: why).
    case appleNotificationIgnored = "apple_notification_ignored"
    /// Apple answered the revocation of a user's Apple refresh token with 200 (written before siwa confirmed
    /// revocations; ``appleRevocationConfirmed`` since).
    case appleRevocationDone = "apple_revocation_done"
    /// A user's Apple refresh token was revoked, and a refresh grant with it then answered `invalid_grant`: it is
    /// really gone (Apple answers 200 to any revocation, one that did nothing included).
    case appleRevocationConfirmed = "apple_revocation_confirmed"
    /// A revocation at Apple was queued for a later attempt.
    case appleRevocationQueued = "apple_revocation_queued"
    /// The admin role was granted (details: `subject`). ``AccountStore/grantAdmin(_:by:now:)`` records it.
    case adminGranted = "admin_granted"
    /// The admin role was revoked (details: `subject`). ``AccountStore/revokeAdmin(_:by:now:)`` records it.
    case adminRevoked = "admin_revoked"
    /// Team transfer, sending team: a `transfer_sub` was obtained for the account.
    case transferExported = "transfer_exported"
    /// Team transfer, receiving team: the account was moved to its new `sub` (``AuditEvent/reason``: `import` or
    /// `sign_in`).
    case transferCompleted = "transfer_completed"
    /// The user allowed a public OpenID relying party on the consent page (details: `client`, `scope`).
    case clientConsentGranted = "client_consent_granted"
    /// A service token of the admin API was created (details: `token`, its name; `scope`; `expires`, Unix seconds).
    case adminTokenCreated = "admin_token_created"
    /// A service token of the admin API was revoked (details as ``adminTokenCreated``).
    case adminTokenRevoked = "admin_token_revoked"
    /// A webhook endpoint was disabled for failing too long, by the system (details: `endpoint`, `failing_since`).
    case webhookEndpointDisabled = "webhook_endpoint_disabled"
    /// A disabled webhook endpoint was enabled again (details: `endpoint`).
    case webhookEndpointEnabled = "webhook_endpoint_enabled"
    /// A webhook delivery was made due again by an operator or an admin (details: `delivery`, `endpoint`, `event`).
    case webhookRedelivered = "webhook_redelivered"
}

/// Who did what an audit event records.
public enum AuditActor: Sendable, Hashable {
    /// The account's own user (the event's ``AuditEvent/userID``).
    case user
    /// An admin, through the console or the admin API.
    case admin(AdminSubject)
    /// Apple: a server-to-server notification Apple sent.
    case apple
    /// siwa itself: housekeeping, reuse detection, background workers, and siwa's own check of an Apple refresh token
    /// that found Apple's consent revoked (siwa asked; Apple did not tell).
    case system
    /// An operator at the command line (`siwa users …`).
    case `operator`
    /// A service token of the admin API, by its name (``AdminToken/name``).
    case serviceToken(String)

    /// The stored name of the actor's kind.
    public var kind: String {
        switch self {
        case .user: "user"
        case .admin: "admin"
        case .apple: "apple"
        case .system: "system"
        case .operator: "operator"
        case .serviceToken: "service_token"
        }
    }

    /// What is stored beside ``kind``: the admin's subject, or the service token's name.
    public var storedSubject: String? {
        switch self {
        case .admin(let subject): subject.rawValue
        case .serviceToken(let name): name
        default: nil
        }
    }

    /// The admin, for ``admin(_:)``.
    public var subject: AdminSubject? {
        if case .admin(let subject) = self { return subject }
        return nil
    }

    /// The actor stored as `kind` (and `subject` for an admin or a service token); `nil` for a kind this siwa does not know.
    public init?(kind: String, subject: String?) {
        switch kind {
        case "user": self = .user
        case "apple": self = .apple
        case "system": self = .system
        case "operator": self = .operator
        case "service_token":
            guard let name = subject, !name.isEmpty else { return nil }
            self = .serviceToken(name)
        case "admin":
            guard let subject = subject.flatMap(AdminSubject.init) else { return nil }
            self = .admin(subject)
        default: return nil
        }
    }
}

/// One entry of the audit log: who did what to which account, when.
///
/// - Warning: An event is read by every admin and kept for the retention period: **never** put a token, an
///   authorization code, a key, a password or a hash of one in it (not in ``reason``, not in ``details``). Ids (siwa
///   ids, session ids, client ids, Apple `sub`s) and short codes are what it holds.
public struct AuditEvent: Sendable, Hashable {
    /// The most entries ``details`` keeps (the first ones in key order).
    public static let maxDetails = 16
    /// The most Unicode scalars a detail's key keeps.
    public static let maxDetailKeyLength = 64
    /// The most Unicode scalars ``reason`` and each detail's value keep.
    public static let maxTextLength = 500

    public var id: UUID
    /// When it happened (stored to the millisecond).
    public var time: Date
    public var type: AuditEventType
    /// The account it is about, if any.
    public var userID: UserID?
    public var actor: AuditActor
    /// How the user signed in (sign-in events).
    public var channel: SignInChannel?
    /// The Apple client id (bundle id or Services ID) involved.
    public var clientID: ClientID?
    /// Why: a short code (a refused sign-in's failed check, an ignored notification's cause, how a transfer ended).
    public var reason: String?
    /// The session it is about.
    public var sessionID: SessionID?
    /// A few more facts as short strings. Never a secret (see the warning above).
    public var details: [String: String]

    public init(
        id: UUID = AuditEvent.newID(),
        time: Date,
        type: AuditEventType,
        userID: UserID? = nil,
        actor: AuditActor,
        channel: SignInChannel? = nil,
        clientID: ClientID? = nil,
        reason: String? = nil,
        sessionID: SessionID? = nil,
        details: [String: String] = [:]
    ) {
        self.id = id
        self.time = time
        self.type = type
        self.userID = userID
        self.actor = actor
        self.channel = channel
        self.clientID = clientID
        self.reason = reason
        self.sessionID = sessionID
        self.details = details
    }

    /// The event as stores keep it: ``reason`` and ``details`` cut to their limits (``maxDetails``,
    /// ``maxDetailKeyLength``, ``maxTextLength``).
    public func limited() -> AuditEvent {
        var event = self
        event.reason = reason?.cut(toScalars: Self.maxTextLength)
        var kept: [String: String] = [:]
        for key in details.keys.sorted().prefix(Self.maxDetails) {
            kept[key.cut(toScalars: Self.maxDetailKeyLength)] = details[key]?.cut(toScalars: Self.maxTextLength)
        }
        event.details = kept
        return event
    }
}

/// Which audit events ``AccountStore/auditEvents(_:limit:after:)`` answers. Every condition set must hold.
public struct AuditEventFilter: Sendable, Hashable {
    /// Only events about this account.
    public var userID: UserID?
    /// Only events of these types (`nil`: every type; empty: none).
    public var types: Set<AuditEventType>?
    /// Only events at or after this time.
    public var since: Date?
    /// Only events before this time.
    public var until: Date?

    public init(
        userID: UserID? = nil,
        types: Set<AuditEventType>? = nil,
        since: Date? = nil,
        until: Date? = nil
    ) {
        self.userID = userID
        self.types = types
        self.since = since
        self.until = until
    }
}

/// How many audit events of one kind happened on one day (UTC), for the console's charts.
public struct AuditEventCount: Sendable, Hashable {
    /// The day's start, 00:00 UTC.
    public var day: Date
    public var type: AuditEventType
    public var channel: SignInChannel?
    public var reason: String?
    public var count: Int

    public init(day: Date, type: AuditEventType, channel: SignInChannel?, reason: String?, count: Int) {
        self.day = day
        self.type = type
        self.channel = channel
        self.reason = reason
        self.count = count
    }

    /// Milliseconds in a day: events are counted by `time / day` in milliseconds since 1970 (UTC days).
    public static let dayMilliseconds: Int64 = 86_400_000

    /// How long after a day ends its counts are final (events are appended when they happen, give or take the
    /// requests in flight and the instances' clocks): from then on a store may count the day once and keep the counts.
    public static let settleTime: TimeInterval = 3_600

    /// The UTC day of `date`: its milliseconds since 1970 divided by ``dayMilliseconds``, rounded down.
    public static func day(of date: Date) -> Int64 {
        let milliseconds = date.storedMilliseconds
        let day = milliseconds / dayMilliseconds
        return milliseconds < 0 && milliseconds % dayMilliseconds != 0 ? day - 1 : day
    }

    /// The start of `day`.
    public static func start(ofDay day: Int64) -> Date {
        Date(timeIntervalSince1970: Double(day * dayMilliseconds) / 1_000)
    }

    /// The last day whose counts are final at `now` (it ended ``settleTime`` ago or more).
    public static func lastSettledDay(now: Date) -> Int64 {
        day(of: now.addingTimeInterval(-settleTime)) - 1
    }

    /// The days that overlap `from..<until`, or `nil` for none.
    public static func days(from: Date, until: Date) -> ClosedRange<Int64>? {
        guard until.storedMilliseconds > from.storedMilliseconds else { return nil }
        return day(of: from)...day(of: until.addingTimeInterval(-0.001))
    }
}

extension AuditEventCount {
    /// The order of ``AccountStore/auditEventCounts(from:until:types:now:)``: day, type, channel, reason (absent first).
    public static func orderedBefore(_ first: AuditEventCount, _ second: AuditEventCount) -> Bool {
        func key(_ count: AuditEventCount) -> [String] {
            [count.type.rawValue, count.channel?.rawValue ?? "", count.reason ?? ""]
        }
        if first.day != second.day { return first.day < second.day }
        return key(first).lexicographicallyPrecedes(key(second)) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

extension AuditEvent {
    /// The event ``AccountStore/grantAdmin(_:by:now:)`` and ``AccountStore/revokeAdmin(_:by:now:)`` record.
    public static func adminRole(
        _ type: AuditEventType,
        _ subject: AdminSubject,
        by actor: AuditActor,
        now: Date
    ) -> AuditEvent {
        AuditEvent(time: now, type: type, userID: subject.userID, actor: actor, details: ["subject": subject.rawValue])
    }
}
