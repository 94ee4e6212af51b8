public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What a lifecycle event says happened. The raw values are the `type` the app's backend reads in the events feed
/// and in webhooks; they never change, and a new kind of event is a new case.
public enum LifecycleEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// An account was created by its first sign-in.
    case userCreated = "user.created"
    /// An account's facts changed (today: Apple's email forwarding turned on or off).
    case userUpdated = "user.updated"
    /// An account was deleted or anonymised, by the user, an operator, an admin or Apple.
    case userDeleted = "user.deleted"
    case userDisabled = "user.disabled"
    case userEnabled = "user.enabled"
    /// The user's consent to the app ended at Apple (Apple's notification, or siwa's own check of the Apple token).
    case userConsentRevoked = "user.consent_revoked"
    /// A team transfer moved the account to the receiving team's Apple user id.
    case userTransferred = "user.transferred"
    /// A session ended, with why.
    case sessionEnded = "session.ended"
}

/// One value of a lifecycle event's ``LifecycleEvent/data``: the payloads are flat JSON objects.
public enum LifecycleEventValue: Sendable, Hashable, Codable {
    case string(String)
    case bool(Bool)
    case null

    public init(_ text: String?) { self = text.map(Self.string) ?? .null }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        }
    }

    /// The text, for a string.
    public var text: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// Something that changed an account or a session, recorded by the store in the same transaction as the change
/// itself (a transactional outbox): the events feed and webhooks tell the app's own backend from it.
///
/// Events of one account come in the order their changes committed; ``sequence`` orders all events that way, so
/// that a reader that saw an event has seen every event before it.
///
/// - Warning: The payload is sent to the team's own backend. It holds what an account record holds (an email, a
///   name, an Apple user id) and **never** a token, a code or a key; deleting an account blanks the personal values
///   (``personalKeys``) of its earlier events.
public struct LifecycleEvent: Sendable, Hashable {
    /// Its place in commit order (the feed's cursor): 1 for the first event, then each one more.
    public var sequence: Int64
    /// Its id, stable across reads and deliveries (a version-7 UUID).
    public var id: UUID
    public var type: LifecycleEventType
    /// The account it is about.
    public var userID: UserID
    /// When the change committed (to the millisecond).
    public var time: Date
    /// What the type's JSON Schema describes (`docs/openapi.json`, `LifecycleEvent…` schemas).
    public var data: [String: LifecycleEventValue]

    public init(
        sequence: Int64 = 0,
        id: UUID = AuditEvent.newID(),
        type: LifecycleEventType,
        userID: UserID,
        time: Date,
        data: [String: LifecycleEventValue]
    ) {
        self.sequence = sequence
        self.id = id
        self.type = type
        self.userID = userID
        self.time = time
        self.data = data
    }

    /// The payload keys that name a person: blanked (`null`) in an account's earlier events when it is deleted.
    public static let personalKeys: Set<String> = [
        "email", "given_name", "family_name", "apple_sub", "old_apple_sub", "new_apple_sub",
    ]

    /// The event with its personal values blanked; `nil` when it has none to blank.
    public func withoutPersonalData() -> LifecycleEvent? {
        var copy = self
        var changed = false
        for key in Self.personalKeys where copy.data[key].map({ $0 != .null }) ?? false {
            copy.data[key] = .null
            changed = true
        }
        return changed ? copy : nil
    }
}

extension LifecycleEvent {
    /// `user.created`, for the account a first sign-in made.
    public static func created(_ user: UserRecord, time: Date) -> LifecycleEvent {
        LifecycleEvent(
            type: .userCreated,
            userID: user.id,
            time: time,
            data: [
                "user_id": .string(user.id.description), "apple_sub": .string(user.appleUserID.rawValue),
                "client_id": .string(user.clientID.rawValue), "email": LifecycleEventValue(user.email),
                "email_verified": .bool(user.emailVerified), "is_private_email": .bool(user.isPrivateEmail),
                "given_name": LifecycleEventValue(user.givenName), "family_name": LifecycleEventValue(user.familyName),
            ]
        )
    }

    /// `user.updated` for Apple's email forwarding turned on or off.
    public static func emailForwarding(_ forwarding: Bool, userID: UserID, time: Date) -> LifecycleEvent {
        LifecycleEvent(
            type: .userUpdated,
            userID: userID,
            time: time,
            data: [
                "user_id": .string(userID.description), "changed": .string("email_forwarding"),
                "email_forwarding": .bool(forwarding),
            ]
        )
    }

    /// `user.deleted`.
    /// - Parameters:
    ///   - mode: deleted or anonymised.
    ///   - appleRevocationQueued: whether the account's Apple token was queued for revocation at Apple in the
    ///     same transaction (`apple_revocation`: `queued`; `none` when there was no token or Apple itself deleted).
    public static func deleted(
        _ userID: UserID,
        mode: AccountDeletionMode,
        by actor: AuditActor,
        appleRevocationQueued: Bool,
        time: Date
    ) -> LifecycleEvent {
        LifecycleEvent(
            type: .userDeleted,
            userID: userID,
            time: time,
            data: [
                "user_id": .string(userID.description), "mode": .string(mode.rawValue), "by": .string(actor.kind),
                "apple_revocation": .string(appleRevocationQueued ? "queued" : "none"),
            ]
        )
    }

    /// `user.disabled`, `user.enabled` or `user.consent_revoked`: the account and who did it.
    public static func account(
        _ type: LifecycleEventType,
        _ userID: UserID,
        by actor: AuditActor,
        time: Date
    ) -> LifecycleEvent {
        LifecycleEvent(
            type: type,
            userID: userID,
            time: time,
            data: ["user_id": .string(userID.description), "by": .string(actor.kind)]
        )
    }

    /// `user.transferred`: the account moved from the sending team's `sub` to the receiving team's.
    public static func transferred(
        _ userID: UserID,
        from oldSub: AppleUserID,
        to newSub: AppleUserID,
        by actor: AuditActor,
        time: Date
    ) -> LifecycleEvent {
        LifecycleEvent(
            type: .userTransferred,
            userID: userID,
            time: time,
            data: [
                "user_id": .string(userID.description), "old_apple_sub": .string(oldSub.rawValue),
                "new_apple_sub": .string(newSub.rawValue), "by": .string(actor.kind),
            ]
        )
    }

    /// `session.ended`, one per session that was active.
    /// - Parameters:
    ///   - channel: how the session was started (`oidc:<client_id>` for a relying party's, whose back-channel logout
    ///     follows from this event); left out when not recorded.
    ///   - reason: a short code (``SessionEndReason``).
    public static func sessionEnded(
        _ sessionID: SessionID,
        userID: UserID,
        channel: SignInChannel?,
        by actor: AuditActor,
        reason: String,
        time: Date
    ) -> LifecycleEvent {
        var data: [String: LifecycleEventValue] = [
            "user_id": .string(userID.description), "session_id": .string(sessionID.description),
            "reason": .string(reason), "by": .string(actor.kind),
        ]
        if let channel { data["channel"] = .string(channel.rawValue) }
        return LifecycleEvent(type: .sessionEnded, userID: userID, time: time, data: data)
    }

    /// The channel a `session.ended` event names (`nil` for another type, or when none was recorded).
    public var sessionChannel: SignInChannel? {
        guard type == .sessionEnded, let text = data["channel"]?.text else { return nil }
        return SignInChannel(rawValue: text)
    }
}

/// Why a session ended, as `session.ended` events and the audit log name it (the codes the audit log has always
/// written).
public enum SessionEndReason {
    public static let logout = "logout"
    /// A rotated refresh token was presented again.
    public static let reuse = "reuse"
    /// An authorization code was redeemed a second time: the session of its first redemption ends.
    public static let codeReplayed = "code_replayed"
    public static let accountDeleted = "account_deleted"
    public static let accountDisabled = "account_disabled"
    public static let appleConsentRevoked = "apple_consent_revoked"
    /// An admin ended it in the console or the admin API.
    public static let admin = "admin"
}
