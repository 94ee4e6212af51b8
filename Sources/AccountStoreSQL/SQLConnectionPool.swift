@preconcurrency import AsyncKit
import Logging
import NIOCore
import SQLKit

/// ``SQLConnections`` over an AsyncKit connection pool: one small pool per event loop of the group, connections
/// opened on demand up to the limit and kept open for reuse, closed ones replaced on the next lease.
final class SQLConnectionPool<Source: ConnectionPoolSource>: SQLConnections, @unchecked Sendable
where Source.Connection: Sendable {
    // @unchecked Sendable: `pool` is an `EventLoopGroupConnectionPool`, which guards its own state with a lock and
    // confines each per-event-loop pool to its event loop (AsyncKit predates `Sendable` annotations); every other
    // stored property is immutable and Sendable.
    private let pool: EventLoopGroupConnectionPool<Source>
    private let makeDatabase: @Sendable (Source.Connection) -> any SQLDatabase
    private let afterShutdown: @Sendable () async -> Void
    private let logger: Logger
    private let writeGate = SQLWriteGate()
    let flavor: SQLFlavor

    /// - Parameters:
    ///   - pool: The pool to lease from; this object shuts it down.
    ///   - flavor: The database family.
    ///   - logger: For the pool's own debug logs.
    ///   - makeDatabase: The SQLKit view of a connection (with query logging off: it would log bound values).
    ///   - afterShutdown: Runs once the pool is closed (to stop what the connections ran on).
    init(
        pool: EventLoopGroupConnectionPool<Source>,
        flavor: SQLFlavor,
        logger: Logger,
        makeDatabase: @escaping @Sendable (Source.Connection) -> any SQLDatabase,
        afterShutdown: @escaping @Sendable () async -> Void = {}
    ) {
        self.pool = pool
        self.flavor = flavor
        self.logger = logger
        self.makeDatabase = makeDatabase
        self.afterShutdown = afterShutdown
    }

    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R
    {
        try await lease { connection in try await body(self.makeDatabase(connection)) }
    }

    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        // SQLite: queue writers here rather than in SQLite's sleeping busy handler (see SQLWriteGate).
        if flavor == .sqlite { await writeGate.acquire() }
        defer { if flavor == .sqlite { writeGate.release() } }
        return try await lease { connection in
            let database = self.makeDatabase(connection)
            try await database.raw(self.flavor.begin).run()
            do {
                if let lock, self.flavor == .postgres {
                    try await database.raw(
                        "SELECT pg_advisory_xact_lock(\(literal: SQLTransactionLock.namespace), \(literal: lock.rawValue))"
                    ).run()
                }
                let result = try await body(database)
                try await database.raw("COMMIT").run()
                return result
            } catch {
                do {
                    try await database.raw("ROLLBACK").run()
                } catch {
                    // A connection that may still be inside a transaction must not go back to the pool.
                    self.logger.debug("closing a connection whose rollback failed")
                    try? await connection.close().get()
                }
                throw error
            }
        }
    }

    func shutdown() async {
        do {
            try await pool.shutdownAsync()
        } catch {
            logger.debug("connection pool was already shut down")
        }
        await afterShutdown()
    }

    /// Leases a connection for `body` and returns it to the pool afterwards.
    private func lease<R: Sendable>(_ body: (Source.Connection) async throws -> R) async throws -> R {
        let connection = try await pool.requestConnection(logger: logger).get()
        do {
            let result = try await body(connection)
            pool.releaseConnection(connection, logger: logger)
            return result
        } catch {
            pool.releaseConnection(connection, logger: logger)
            throw error
        }
    }
}
