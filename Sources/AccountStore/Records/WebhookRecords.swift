#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where one webhook delivery stands.
public enum WebhookDeliveryState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its next attempt, or for its turn behind an earlier event of the same account.
    case pending
    /// An attempt was answered with a 2xx status.
    case delivered
    /// Given up after being retried for the configured time (an operator can still redeliver it).
    case failed
}

/// One lifecycle event to be sent to one webhook endpoint, and how its attempts went.
///
/// Deliveries of one endpoint and account go out in the order of their events: an earlier pending delivery holds
/// back the account's later ones (not other accounts').
public struct WebhookDelivery: Sendable, Hashable {
    /// Its id, stable across attempts (a version-7 UUID); the `webhook-id` header is the event's id instead.
    public var id: UUID
    /// The endpoint's configured name.
    public var endpoint: String
    /// The event as stored now: a deleted account's personal values are blanked in pending deliveries too.
    public var event: LifecycleEvent
    public var state: WebhookDeliveryState
    /// How many attempts were made.
    public var attempts: Int
    /// When it was queued.
    public var createdAt: Date
    /// When a pending delivery is tried next; `nil` once delivered or given up.
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    /// The HTTP status of the last answer; `nil` before the first attempt or when the last one got no answer.
    public var lastStatus: Int?
    /// Why the last attempt failed, as siwa saw it (never the receiver's body).
    public var lastError: String?
    public var deliveredAt: Date?

    public init(
        id: UUID,
        endpoint: String,
        event: LifecycleEvent,
        state: WebhookDeliveryState,
        attempts: Int,
        createdAt: Date,
        nextAttemptAt: Date?,
        lastAttemptAt: Date? = nil,
        lastStatus: Int? = nil,
        lastError: String? = nil,
        deliveredAt: Date? = nil
    ) {
        self.id = id
        self.endpoint = endpoint
        self.event = event
        self.state = state
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
    }
}

/// One attempt of a webhook delivery.
public struct WebhookAttempt: Sendable, Hashable {
    /// When it started.
    public var time: Date
    /// The answer's HTTP status; `nil` when none came (refused address, connection error, timeout).
    public var status: Int?
    /// Why it failed; `nil` for a 2xx answer.
    public var error: String?
    /// How long it took, in milliseconds.
    public var milliseconds: Int64

    public init(time: Date, status: Int?, error: String?, milliseconds: Int64) {
        self.time = time
        self.status = status
        self.error = error
        self.milliseconds = milliseconds
    }

    /// Whether the receiver took the event (a 2xx answer).
    public var succeeded: Bool { error == nil && status.map { (200..<300).contains($0) } == true }
}

/// What follows an attempt.
public enum WebhookAttemptNext: Sendable, Hashable {
    /// It succeeded.
    case delivered
    /// It failed; try again at the date.
    case retry(at: Date)
    /// It failed and the delivery was retried long enough.
    case giveUp
}

/// A webhook endpoint as the store keeps it: where its queueing stands, and whether it is failing or disabled. The
/// endpoint itself (URL, secrets, event types) comes from configuration.
public struct WebhookEndpointState: Sendable, Hashable {
    public var name: String
    /// The last event sequence examined for it: later events are queued next.
    public var afterSequence: Int64
    /// When it was first seen (it hears the events after that).
    public var createdAt: Date
    /// Since when every attempt has failed; `nil` while the last attempt succeeded.
    public var failingSince: Date?
    /// When it was disabled for failing too long; `nil` while enabled.
    public var disabledAt: Date?
    /// How many of its deliveries are pending.
    public var pending: Int
    /// When the oldest event of its pending deliveries happened: the endpoint's lag.
    public var oldestPendingEventAt: Date?

    public init(
        name: String,
        afterSequence: Int64,
        createdAt: Date,
        failingSince: Date?,
        disabledAt: Date?,
        pending: Int,
        oldestPendingEventAt: Date?
    ) {
        self.name = name
        self.afterSequence = afterSequence
        self.createdAt = createdAt
        self.failingSince = failingSince
        self.disabledAt = disabledAt
        self.pending = pending
        self.oldestPendingEventAt = oldestPendingEventAt
    }
}
