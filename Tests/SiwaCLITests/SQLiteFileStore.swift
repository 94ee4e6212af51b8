import AccountStoreSQL
import Logging
import SiwaTesting

/// Opens the SQLite file a `siwa` subprocess uses (as a second process on it would), runs `body`, and closes it.
func withSQLiteStore<R>(at path: String, _ body: (SQLAccountStore) async throws -> R) async throws -> R {
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    let store = try await SQLAccountStore.sqlite(path: path, logger: logger)
    return try await withClosing(store, close: { await $0.shutdown() }, body)
}
