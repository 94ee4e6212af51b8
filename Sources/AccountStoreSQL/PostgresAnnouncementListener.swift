import AccountStore
import AppleSignIn
import Logging
import NIOCore
import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Hears what the triggers of schema version 9 announce (``SQLSchema/announcementTriggers``), on a connection of its
/// own beside the pool, and turns each notification into a ``StoreAnnouncement``.
///
/// PostgreSQL delivers a notification to the connections listening when its transaction commits, and to no other: a
/// connection that is lost misses what commits meanwhile. So every (re)connection is announced as
/// ``StoreAnnouncement/resynchronize`` once its `LISTEN` is in effect, for the listener's user to read everything
/// again; a connection that fails is opened again after a delay that grows to 5 s.
struct PostgresAnnouncementListener: Sendable {
    /// Opens a connection with the store's settings (its search path, its deadline).
    let open: @Sendable (Logger) async throws -> PostgresConnection
    let logger: Logger

    /// The announcements, for as long as the caller iterates (ending the iteration closes the connection).
    func stream() -> AsyncStream<StoreAnnouncement> {
        let (stream, continuation) = AsyncStream<StoreAnnouncement>.makeStream(
            bufferingPolicy: .bufferingNewest(100_000)
        )
        let task = Task { await run(continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func run(_ continuation: AsyncStream<StoreAnnouncement>.Continuation) async {
        var failures = 0
        while !Task.isCancelled {
            let started = ContinuousClock.now
            do {
                let connection = try await open(logger)
                var failure: (any Error)?
                do {
                    try await withTaskCancellationHandler {
                        try await listen(on: connection, continuation)
                    } onCancel: {
                        connection.close().whenComplete { _ in }
                    }
                } catch {
                    failure = error
                }
                // Closed whatever happened (also after the server ended it): a connection is released closed.
                try? await connection.close()
                if let failure { throw failure }
            } catch  where !Task.isCancelled {
                logger.warning(
                    "listening for other instances' changes failed; polling meanwhile",
                    metadata: ["error": "\(String(reflecting: type(of: error)))"]
                )
            } catch {
                break
            }
            // A connection that listened for a while before it was lost is tried again soon.
            failures = ContinuousClock.now - started > .seconds(30) ? 1 : failures + 1
            try? await Task.sleep(for: .milliseconds(min(250 * (1 << min(failures, 5)), 5_000)))
        }
        continuation.finish()
    }

    private func listen(
        on connection: PostgresConnection,
        _ continuation: AsyncStream<StoreAnnouncement>.Continuation
    ) async throws {
        let schema =
            try await connection.query("SELECT current_schema() AS schema", logger: logger)
            .collect().first?.decode(String.self, context: .default) ?? ""
        try await connection.listen(on: SQLSchema.announcementChannel) { notifications in
            var lost = false
            continuation.yield(.resynchronize)
            for try await notification in notifications {
                guard let announcement = Self.announcement(notification.payload, schema: schema) else { continue }
                // A full buffer drops the oldest announcement: whoever reads must then read everything again.
                if case .dropped = continuation.yield(announcement) { lost = true }
                if lost, case .enqueued = continuation.yield(.resynchronize) { lost = false }
            }
        }
    }

    /// A trigger's payload, `<schema> <kind> [<id> [<milliseconds>]]`, as an announcement; `nil` for another
    /// deployment's schema or a payload this siwa does not know.
    static func announcement(_ payload: String, schema: String) -> StoreAnnouncement? {
        let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == schema else { return nil }
        func id() -> String? { parts.count > 2 ? String(parts[2]) : nil }
        func time() -> Date? {
            guard parts.count > 3, let milliseconds = Int64(parts[3]) else { return nil }
            return SQLValue.date(milliseconds: milliseconds)
        }
        switch parts[1] {
        case "session":
            guard let text = id(), let sessionID = try? SQLValue.sessionID(text), let at = time() else { return nil }
            return .sessionEnded(sessionID, at: at)
        case "deletion":
            guard let text = id(), let userID = try? SQLValue.userID(text), let at = time() else { return nil }
            return .accountDeleted(userID, at: at)
        case "account":
            guard let text = id(), let userID = try? SQLValue.userID(text) else { return nil }
            return .accountChanged(userID)
        case "keys":
            return .signingKeysChanged
        default:
            return nil
        }
    }
}
