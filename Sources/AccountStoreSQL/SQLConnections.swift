import Logging
import PostgresNIO
import SQLKit

/// Connections to one database, leased one at a time to a closure.
protocol SQLConnections: Sendable {
    var flavor: SQLFlavor { get }

    /// Runs `body` with a connection of its own (statements outside a transaction).
    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R

    /// Runs `body` in a transaction on a connection of its own: committed when `body` returns, rolled back when it
    /// throws.
    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R

    /// Runs `body`, whose write statements each commit on their own, on a connection of its own; on SQLite on the
    /// ``SQLiteWriter``, in turn with this process's other writes.
    func withWriteStatements<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R

    /// PostgreSQL only: runs `body` with the driver's own connection, for prepared statements (parsed and planned once
    /// per connection) and rows decoded without SQLKit's `Codable` layer. Throws on any other database.
    func withPostgresConnection<R: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R

    /// Closes every connection. The pool serves nothing afterwards.
    func shutdown() async
}

/// Runs `body` in a transaction on `database`: committed when `body` returns, rolled back when it throws. A
/// connection whose rollback fails may still be inside the transaction: `discard` closes it so that it is not reused.
func runTransaction<R: Sendable>(
    on database: any SQLDatabase,
    flavor: SQLFlavor,
    lock: SQLTransactionLock?,
    logger: Logger,
    discard: () async -> Void,
    _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
) async throws -> R {
    try await database.raw(flavor.begin).run()
    do {
        if let lock, flavor == .postgres {
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
            logger.debug("closing a connection whose rollback failed")
            await discard()
        }
        throw error
    }
}
