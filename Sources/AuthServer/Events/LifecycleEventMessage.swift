import AccountStore
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One lifecycle event as the app's backend reads it: an item of the events feed (`GET /admin/api/events`), in the
/// shape the Standard Webhooks specification gives a payload (`type`, `timestamp`, `data`) with the event's stable
/// `id` and its `sequence`, the feed's cursor. `docs/openapi.json` gives each type's `data` a JSON Schema.
struct LifecycleEventMessage: ResponseCodable, Equatable {
    /// The event's id: the same in every read of the feed (and the `webhook-id` of its deliveries).
    var id: String
    /// Its place in commit order; `after` of the feed takes it.
    var sequence: Int64
    var type: String
    /// When the change committed.
    var timestamp: Date
    var data: [String: LifecycleEventValue]

    init(_ event: LifecycleEvent) {
        id = event.id.lowercasedText
        sequence = event.sequence
        type = event.type.rawValue
        timestamp = event.time
        data = event.data
    }
}

/// A page of the events feed: the events after the cursor, in commit order, and the cursor to ask with next.
struct LifecycleEventPage: ResponseCodable, Equatable {
    var events: [LifecycleEventMessage]
    /// The `after` of the next request: the last event's sequence, or the cursor asked with when no event followed
    /// it (a reader keeps it and asks again later).
    var next: String
    /// Whether more events follow at once (the page was full).
    var hasMore: Bool
}
