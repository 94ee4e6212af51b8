import AccountStore
import AccountStoreSQL
import Logging
import SiwaTesting
import Synchronization
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Opens SQL stores for tests and closes them afterwards, also when the test fails.
enum StoreHarness {
    /// `SIWA_TEST_POSTGRES_URL`, set by `scripts/with-postgres` (and so by `scripts/test`).
    static let postgresURL: String? = {
        guard let url = ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    static let quietLogger = Logger(label: "siwa.test.store") { _ in SwiftLogNoOpLogHandler() }

    /// A path for an SQLite file in a new temporary directory, removed with its WAL files after `body`.
    static func withSQLitePath<R>(_ body: (String) async throws -> R) async throws -> R {
        try await withTemporaryFolder("siwa-store") { folder in
            try await body(folder.url.appendingPathComponent("siwa.sqlite").path)
        }
    }

    /// Opens the SQLite store at `path`, runs `body`, and shuts the store down.
    static func withSQLiteStore<R>(
        path: String,
        logger: Logger = quietLogger,
        _ body: (SQLAccountStore) async throws -> R
    ) async throws -> R {
        let store = try await SQLAccountStore.sqlite(path: path, logger: logger)
        return try await withClosing(store, close: { await $0.shutdown() }, body)
    }

    /// Opens a store on `SIWA_TEST_POSTGRES_URL` in `schema`, runs `body`, and shuts the store down.
    static func withPostgresStore<R>(
        schema: String,
        logger: Logger = quietLogger,
        _ body: (SQLAccountStore) async throws -> R
    ) async throws -> R {
        let url = try #require(postgresURL)
        let store = try await SQLAccountStore.postgres(
            url: url,
            schema: schema,
            maximumConnections: 4,
            logger: logger
        )
        return try await withClosing(store, close: { await $0.shutdown() }, body)
    }

    /// A schema name no other test uses.
    static func freshSchema() -> String {
        "siwa_test_" + UUID().uuidString.lowercased().replacing("-", with: "")
    }
}

/// Every line a ``RecordingLogHandler`` logged, for tests that look for secrets in logs.
final class LogRecording: Sendable {
    private let storage = Mutex<[String]>([])

    /// A logger at trace level that records into a new recording.
    static func logger() -> (Logger, LogRecording) {
        let recording = LogRecording()
        return (Logger(label: "siwa.test.recording") { _ in RecordingLogHandler(recording: recording) }, recording)
    }

    /// Every line logged so far: level, message, metadata.
    var lines: [String] { storage.withLock { $0 } }

    func append(_ line: String) {
        storage.withLock { $0.append(line) }
    }
}

/// A log handler at trace level that keeps every message with its metadata.
struct RecordingLogHandler: LogHandler {
    let recording: LogRecording
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        recording.append("\(event.level) \(event.message) \(merged)")
    }
}
