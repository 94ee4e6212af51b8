import AsyncKit
import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO

/// Opens connections to one SQLite file with the settings siwa relies on.
///
/// Every connection waits up to `busyTimeoutMilliseconds` for another writer (another process, or another connection
/// of the pool) instead of failing at once, enforces foreign keys, and syncs at `NORMAL`, which is safe in WAL mode.
/// WAL itself is a property of the file, set once when the store opens.
struct SQLiteFileConnectionSource: ConnectionPoolSource {
    let path: String
    /// Runs the SQLite calls. It has a thread for every connection the pool may open, so that a connection holding the
    /// write lock always gets a thread while others sleep in the busy handler.
    let threadPool: NIOThreadPool
    let busyTimeoutMilliseconds: Int

    func makeConnection(logger: Logger, on eventLoop: any EventLoop) -> EventLoopFuture<SQLiteConnection> {
        let busyTimeout = busyTimeoutMilliseconds
        return SQLiteConnection.open(storage: .file(path: path), threadPool: threadPool, logger: logger, on: eventLoop)
            .flatMap { connection in
                eventLoop.makeFutureWithTask {
                    let database = connection.sql(queryLogLevel: nil)
                    do {
                        // Replaces SQLiteNIO's busy handler, which retries at once and forever.
                        try await database.raw("PRAGMA busy_timeout = \(literal: busyTimeout)").run()
                        try await database.raw("PRAGMA foreign_keys = ON").run()
                        try await database.raw("PRAGMA synchronous = NORMAL").run()
                        return connection
                    } catch {
                        try? await connection.close().get()
                        throw error
                    }
                }
            }
    }
}
