import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO
import Synchronization

/// Opens the reading connections to one SQLite file with the settings siwa relies on (the writer opens its own, see
/// ``SQLiteWriter``).
///
/// Every connection waits up to `busyTimeoutMilliseconds` for another writer (another process, or another connection
/// of the pool) instead of failing at once, enforces foreign keys, and syncs at `NORMAL`, which is safe in WAL
/// mode (for the rare write a reader still makes, such as switching a new file to WAL).
/// WAL itself is a property of the file, set once when the store opens.
struct SQLiteFileConnectionSource: Sendable {
    let path: String
    /// Runs the SQLite calls: a thread for every connection the pool may open, so that no read waits for a thread.
    let threadPool: NIOThreadPool
    let busyTimeoutMilliseconds: Int
    /// Connections being opened: the thread pool must outlive them (see ``waitForOpenings(timeout:)``).
    let openings = Openings()

    /// Counts connections being opened. A pool shut down while one is being opened closes it when it arrives, on
    /// the thread pool; stopping the thread pool before that would leave the connection open (and SQLiteNIO asserts).
    final class Openings: Sendable {
        private let count = Mutex(0)
        func begin() { count.withLock { $0 += 1 } }
        func end() { count.withLock { $0 -= 1 } }
        var inFlight: Int { count.withLock { $0 } }
    }

    /// Waits until no connection is being opened (at most `timeout`), then a moment more for the pool to close
    /// late arrivals; call it after the pool is shut down and before the thread pool stops.
    func waitForOpenings(timeout: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + timeout
        while openings.inFlight > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        try? await Task.sleep(for: .milliseconds(100))
    }

    func makeConnection(logger: Logger, on eventLoop: any EventLoop) -> EventLoopFuture<SQLiteConnection> {
        let busyTimeout = busyTimeoutMilliseconds
        let openings = self.openings
        openings.begin()
        // Plain futures, no Swift concurrency: opening must not wait for a cooperative thread, which a busy process
        // (many tests generating keys at once) may not free before the pool's request timeout.
        return SQLiteConnection.open(storage: .file(path: path), threadPool: threadPool, logger: logger, on: eventLoop)
            .flatMap { connection in
                // Replaces SQLiteNIO's busy handler, which retries at once and forever.
                connection.query("PRAGMA busy_timeout = \(busyTimeout)", [])
                    .flatMap { _ in connection.query("PRAGMA foreign_keys = ON", []) }
                    .flatMap { _ in connection.query("PRAGMA synchronous = NORMAL", []) }
                    .map { _ in connection }
                    .flatMapError { error in
                        connection.close().flatMapThrowing { throw error }
                    }
            }
            .always { _ in openings.end() }
    }
}
