import AccountStore
import AccountStoreSQL
import Logging

/// Opens the store the settings name: PostgreSQL when `SIWA_DATABASE_URL` is set, else the SQLite file. Migrations run
/// on open.
enum StoreFactory {
    /// An open store and how to close it.
    struct Opened: Sendable {
        let store: any AccountStore
        let close: @Sendable () async -> Void
        /// The schema version found when opening (0: the schema was just created).
        var foundSchemaVersion = SQLAccountStore.schemaVersion
    }

    static func open(_ settings: ServerSettings, logger: Logger) async throws -> Opened {
        let store: SQLAccountStore
        do {
            if let url = settings.databaseURL {
                store = try await SQLAccountStore.postgres(url: url, logger: logger)
                logger.info("using PostgreSQL")
            } else {
                store = try await SQLAccountStore.sqlite(path: settings.databasePath, logger: logger)
                logger.info("using SQLite", metadata: ["path": "\(settings.databasePath)"])
            }
        } catch {
            Terminal.error(
                "error: \(settings.databaseURL == nil ? "SIWA_DATABASE_PATH" : "SIWA_DATABASE_URL"): \(error.reason)"
            )
            throw error
        }
        return Opened(
            store: store,
            close: { await store.shutdown() },
            foundSchemaVersion: store.openedAtSchemaVersion
        )
    }
}
