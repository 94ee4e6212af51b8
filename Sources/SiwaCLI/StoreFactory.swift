import AccountStore
import AccountStoreSQL
import ArgumentParser
import Logging

/// Opens the store the settings name: PostgreSQL when `SIWA_DATABASE_URL` is set, else the SQLite file. Migrations run
/// on open.
enum StoreFactory {
    /// An open store and how to close it.
    struct Opened: Sendable {
        let store: SQLAccountStore
        let close: @Sendable () async -> Void
        /// The schema version found when opening (0: the schema was just created).
        var foundSchemaVersion = SQLAccountStore.schemaVersion
    }

    /// - Parameters:
    ///   - checksDataKey: the command seals or unseals: its data key must open what the database holds sealed, or it
    ///     stops here naming the setting (``ServerSettings/checkDataKey(opens:)``).
    ///   - applicationName: PostgreSQL's name for the connections (`siwa serve` for the server's, which a restore waits
    ///     to see gone).
    static func open(
        _ settings: ServerSettings,
        logger: Logger,
        checksDataKey: Bool = false,
        applicationName: String = "siwa"
    ) async throws -> Opened {
        let store: SQLAccountStore
        do {
            if let url = settings.databaseURL {
                store = try await SQLAccountStore.postgres(
                    url: url,
                    maximumConnections: settings.databaseMaxConnections,
                    applicationName: applicationName,
                    logger: logger
                )
                logger.info("using PostgreSQL")
            } else {
                store = try await SQLAccountStore.sqlite(path: settings.databasePath, logger: logger)
                logger.info("using SQLite", metadata: ["path": "\(settings.databasePath)"])
            }
        } catch {
            Terminal.error("error: \(settings.databaseSettingName): \(error.reason)")
            throw error
        }
        if checksDataKey {
            do {
                try await settings.checkDataKey(opens: store)
            } catch let problem as ServerSettings.Problem {
                await store.shutdown()
                Terminal.error("error: \(problem)")
                throw ExitCode(2)
            }
        }
        settings.logCreatedDataKey(logger)
        return Opened(
            store: store,
            close: { await store.shutdown() },
            foundSchemaVersion: store.openedAtSchemaVersion
        )
    }

    /// The schema version of the database the settings name, read without creating or changing anything: 0 for a
    /// SQLite file not created yet, or a database without siwa's tables.
    static func schemaVersion(_ settings: ServerSettings, logger: Logger) async throws(StoreError) -> Int {
        let check =
            if let url = settings.databaseURL {
                try await SQLAccountStore.checkConnection(postgresURL: url, logger: logger)
            } else {
                try await SQLAccountStore.checkConnection(sqlitePath: settings.databasePath, logger: logger)
            }
        switch check {
        case .connected(let version): return version
        case .notCreatedYet: return 0
        }
    }

    /// Opens the store the settings name as it is, for `siwa doctor`: creates and migrates nothing, and fails unless
    /// the database exists with the current schema.
    static func openExisting(_ settings: ServerSettings, logger: Logger) async throws(StoreError) -> SQLAccountStore {
        if let url = settings.databaseURL {
            return try await SQLAccountStore.existingPostgres(url: url, logger: logger)
        }
        return try await SQLAccountStore.existingSQLite(path: settings.databasePath, logger: logger)
    }
}
