import AccountStore
import Foundation
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

    /// What `siwa doctor` compares the pool size with: the server's `max_connections` less the slots reserved for
    /// superusers, which a plain login cannot use and a superuser can, and the login's own `CONNECTION LIMIT`; and the
    /// connections open, other logins' sessions included though a plain login may not see them.
    @Test func theConnectionCapacityCountsWhatAPlainLoginMayUse() async throws {
        let url = try #require(StoreHarness.postgresURL)
        let role = "doctor_plain_\(UInt32.random(in: 0...UInt32.max))"
        let password = "p\(UInt64.random(in: 0...UInt64.max))"
        try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema()) { store in
            // The store's pool keeps this superuser connection open (idle) for the rest of the test.
            let (maximum, reserved) = try await store.postgres("settings") { connection, logger in
                let rows = try await connection.query(
                    """
                    SELECT current_setting('max_connections')::int,
                        current_setting('superuser_reserved_connections')::int
                    """,
                    logger: logger
                ).collect()
                return try #require(rows.first).decode((Int, Int).self)
            }
            var failure: (any Error)?
            do {
                try await store.postgres("create role") { connection, logger in
                    _ = try await connection.query(
                        PostgresQuery(
                            unsafeSQL: "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 7 PASSWORD '\(password)'"
                        ),
                        logger: logger
                    ).collect()
                }
                let superuser = try await SQLAccountStore.connectionCapacity(
                    postgresURL: url,
                    logger: StoreHarness.quietLogger
                )
                #expect(superuser.maxConnections == maximum)
                #expect(superuser.reserved == 0, "the test server's login is a superuser")
                #expect(superuser.roleLimit == nil)
                #expect(superuser.hidden == 0, "a superuser sees every session")
                #expect(superuser.open >= 2, "the check's own connection and the store's")

                var plainURL = try #require(URLComponents(string: url))
                plainURL.user = role
                plainURL.password = password
                let plain = try await SQLAccountStore.connectionCapacity(
                    postgresURL: try #require(plainURL.string),
                    logger: StoreHarness.quietLogger
                )
                #expect(plain.maxConnections == maximum)
                #expect(plain.reserved == reserved)
                #expect(plain.roleLimit == 7)
                #expect(plain.available == min(maximum - reserved, 7))
                #expect(plain.openForRole == 1, "the check's own connection only")
                #expect(plain.hidden >= 1, "the store's superuser connection, which this login may not see")
                #expect(plain.open >= 2, "the hidden session counted as open")
            } catch {
                failure = error
            }
            // Roles are the whole server's: this one goes, whatever the checks found.
            _ = try await store.postgres("drop role") { connection, logger in
                try await connection.query(PostgresQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)"), logger: logger)
                    .collect()
            }
            if let failure { throw failure }
        }
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
