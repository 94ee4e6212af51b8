#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a page of the audit log starts: after the event with this time and id (newest first).
public struct AuditLogPosition: Sendable, Hashable {
    /// The time in milliseconds since 1970.
    public var time: Int64
    /// The event's id, lower-case.
    public var id: String

    public init(time: Int64, id: UUID) {
        self.time = time
        self.id = Self.text(id)
    }

    /// Reads a cursor of the audit log; `nil` for none.
    /// - Throws: ``StoreError/Code/invalidInput`` for a cursor not made for the audit log.
    public init?(_ cursor: PageCursor?) throws(StoreError) {
        guard let cursor else { return nil }
        let parts = cursor.parts
        guard parts.count == 3, parts[0] == "audit", let time = Int64(parts[1]), let id = UUID(text: parts[2])
        else { throw StoreError(.invalidInput, "audit events: the cursor is not one of the audit log") }
        self.init(time: time, id: id)
    }

    /// The cursor of a page that ended here.
    public var cursor: PageCursor { PageCursor(parts: ["audit", String(time), id]) }

    /// Whether an event at `time` with `id` comes after this position, newest first.
    public func isFollowed(byTime eventTime: Int64, id eventID: UUID) -> Bool {
        let other = Self.text(eventID)
        return eventTime < time || (eventTime == time && other.utf8.lexicographicallyPrecedes(id.utf8))
    }

    /// Whether the first event comes before the second, newest first.
    public static func precedes(_ first: (time: Int64, id: UUID), _ second: (time: Int64, id: UUID)) -> Bool {
        if first.time != second.time { return first.time > second.time }
        return text(second.id).utf8.lexicographicallyPrecedes(text(first.id).utf8)
    }

    /// An event id as stored: lower-case.
    public static func text(_ id: UUID) -> String { id.lowercasedText }
}
