import AccountStore
import PostgresNIO
import SQLKit
import SQLiteNIO

/// ``SQLConnections`` to one SQLite file: reads on a pool of SQLiteNIO connections, every write on the one
/// ``SQLiteWriter``.
final class SQLiteConnections: SQLConnections {
    var flavor: SQLFlavor { .sqlite }
    let readers: SQLConnectionPool<SQLiteConnection>
    let writer: SQLiteWriter

    init(readers: SQLConnectionPool<SQLiteConnection>, writer: SQLiteWriter) {
        self.readers = readers
        self.writer = writer
    }

    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R
    {
        try await readers.withConnection(body)
    }

    /// On the writer; `lock` is for PostgreSQL (the writer runs one transaction at a time).
    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await writer.withTransaction(body)
    }

    func withWriteStatements<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await body(writer.database)
    }

    func withPostgresConnection<R: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        throw StoreError(.invalidInput, "a PostgreSQL statement was sent to SQLite")
    }

    /// Closes the readers, then the writer after the writes already queued.
    func shutdown() async {
        await readers.shutdown()
        await writer.shutdown()
    }
}
