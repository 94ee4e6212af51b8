import AccountStore
import Logging
import PostgresKit
import PostgresNIO
import SQLKit

/// Which pool holds a PostgreSQL store's connections. siwa uses ``siwa`` (``SQLConnectionPool``); ``postgresClient``
/// (postgres-nio's `PostgresClient`) is kept for `siwa-benchmarks store-pools`, which measures both in one run: the
/// comparison, with its numbers in docs/reliability.md.
package enum PostgresPooling: String, Sendable, CaseIterable {
    case siwa
    case postgresClient
}

/// ``SQLConnections`` over postgres-nio's `PostgresClient` (keep-alive, idle timeout, its own pool state machine).
/// For the comparison only: it runs the same statements as ``SQLConnectionPool`` through the same `runTransaction`.
final class PostgresClientConnections: SQLConnections {
    let flavor = SQLFlavor.postgres
    private let client: PostgresClient
    private let running: Task<Void, Never>
    private let logger: Logger

    init(configuration: SQLPostgresConfiguration, limit: Int, logger: Logger) throws(StoreError) {
        let core = configuration.coreConfiguration
        guard let host = core.host, !core.tls.isAllowed else {
            throw StoreError(.invalidInput, "the PostgresClient comparison takes a TCP URL with sslmode=disable")
        }
        var clientConfiguration = PostgresClient.Configuration(
            host: host,
            port: core.port ?? 5432,
            username: core.username,
            password: core.password,
            database: core.database,
            tls: .disable
        )
        clientConfiguration.options.maximumConnections = limit
        if let searchPath = configuration.searchPath {
            clientConfiguration.options.additionalStartupParameters = [
                ("search_path", searchPath.joined(separator: ","))
            ]
        }
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.running = Task { await client.run() }
    }

    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R
    {
        try await client.withConnection { connection in try await body(connection.sql(queryLogLevel: nil)) }
    }

    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await client.withConnection { connection in
            try await runTransaction(
                on: connection.sql(queryLogLevel: nil),
                flavor: .postgres,
                lock: lock,
                logger: self.logger,
                discard: { try? await connection.close() },
                body
            )
        }
    }

    func withWriteStatements<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await withConnection(body)
    }

    func withPostgresConnection<R: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await client.withConnection { connection in try await body(connection) }
    }

    func shutdown() async {
        running.cancel()
        await running.value
    }
}
