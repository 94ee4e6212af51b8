import AccountStore
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import AccountStoreSQL
@testable import SiwaCLI

/// The store every command opens from its settings. It opens the test server's default schema, as `serve` does (the
/// server of `scripts/with-postgres` is private to the run; migrations take turns under their advisory lock).
@Suite(
    "StoreFactory",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    )
)
struct StoreFactoryTests {
    /// `SIWA_DATABASE_MAX_CONNECTIONS` reaches the PostgreSQL pool; without it, the store's default.
    @Test(arguments: [("3", 3), (nil, SQLAccountStore.defaultMaximumConnections)] as [(String?, Int)])
    func thePoolSizeSettingReachesTheStore(setting: String?, limit: Int) async throws {
        var environment = [
            "SIWA_BUNDLE_IDS": "com.example.app",
            "SIWA_DATA_KEY_FILE": "/nonexistent/siwa-test.key",
            "SIWA_DATABASE_URL": ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]!,
        ]
        environment["SIWA_DATABASE_MAX_CONNECTIONS"] = setting
        let settings = try ServerSettings.load(from: environment, createsDataKey: false)
        var logger = Logger(label: "siwa.test")
        logger.logLevel = .error
        let opened = try await StoreFactory.open(settings, logger: logger)
        let store = opened.store
        let pool = store.connections as? SQLConnectionPool<PostgresConnection>
        await opened.close()
        #expect(pool?.limit == limit)
    }
}
