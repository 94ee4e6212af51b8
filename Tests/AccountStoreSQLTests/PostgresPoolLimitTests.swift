import AccountStore
import PostgresNIO
import SiwaTesting
import Testing

@testable import AccountStoreSQL

/// The PostgreSQL pool's limit (`SIWA_DATABASE_MAX_CONNECTIONS`): every instance's connections, added up, must stay under
/// the server's `max_connections`, so the limit an operator sets is the most the store opens, however many requests
/// wait.
@Suite(
    .enabled(
        if: StoreHarness.postgresURL != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    )
)
struct PostgresPoolLimitTests {
    @Test func theStoreOpensAtMostTheConnectionsItIsAllowed() async throws {
        let url = try #require(StoreHarness.postgresURL)
        let store = try await SQLAccountStore.postgres(
            url: url,
            schema: StoreHarness.freshSchema(),
            maximumConnections: 3,
            logger: StoreHarness.quietLogger
        )
        try await withClosing(store, close: { await $0.shutdown() }, Self.twelveStatementsAtOnce)
    }

    /// Runs 12 statements at once on `store`, which is allowed 3 connections.
    private static func twelveStatementsAtOnce(on store: SQLAccountStore) async throws {
        let pool = try #require(store.connections as? SQLConnectionPool<PostgresConnection>)
        #expect(pool.limit == 3)
        // Four times as many statements as places, all at once: each names the server process that ran it.
        let backends = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await store.postgres("name the backend") { connection, logger in
                        let rows = try await connection.query(
                            "SELECT pg_backend_pid() FROM pg_sleep(0.02)",
                            logger: logger
                        ).collect()
                        return try #require(rows.first).decode(Int32.self)
                    }
                }
            }
            var backends = Set<Int32>()
            for try await backend in group { backends.insert(backend) }
            return backends
        }
        #expect(backends.count <= 3, "\(backends.count) server processes served a store allowed 3 connections")
    }

    @Test func withoutASettingTheLimitIs16() async throws {
        let url = try #require(StoreHarness.postgresURL)
        let store = try await SQLAccountStore.postgres(
            url: url,
            schema: StoreHarness.freshSchema(),
            logger: StoreHarness.quietLogger
        )
        let limit = (store.connections as? SQLConnectionPool<PostgresConnection>)?.limit
        await store.shutdown()
        #expect(limit == SQLAccountStore.defaultMaximumConnections)
        #expect(limit == 16)
    }
}

/// A limit outside 1…1,000 is refused before any connection is made.
@Suite struct PostgresPoolLimitInputTests {
    @Test(arguments: [0, -1, 1_001])
    func aLimitOutOfRangeIsInvalidInput(limit: Int) async throws {
        await #expect(throws: StoreError.invalidInput) {
            try await SQLAccountStore.postgres(
                url: "postgres://user:pw@127.0.0.1:1/db?sslmode=disable",
                maximumConnections: limit,
                logger: StoreHarness.quietLogger
            )
        }
    }
}
