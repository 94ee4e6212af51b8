import AccountStore
import AccountStoreSQL
import AppleSignIn
import SQLiteNIO
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The SQL store on SQLite: the conformance suite on a new file per check, and what only a file shows (a second
/// instance, reopening, WAL).
@Suite struct SQLiteAccountStoreTests {
    @Test(arguments: AccountStoreConformance.checks)
    func conformance(_ check: AccountStoreConformance.Check) async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { store in try await check.run(store) }
        }
    }

    @Test func aSecondInstanceOnTheSameFileReadsTheFirstOnesData() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { first in
                try await StoreHarness.withSQLiteStore(path: path) { second in
                    try await SharedDatabaseScenario.run(writer: first, reader: second)
                }
            }
        }
    }

    @Test func migrationsAreIdempotent() async throws {
        try await StoreHarness.withSQLitePath { path in
            let written = try await StoreHarness.withSQLiteStore(path: path) { store in
                #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
                return try await store.signIn(
                    AppleSignInFacts(appleUserID: AppleUserID("001.kept.1"), clientID: "com.example.app"),
                    now: Date(timeIntervalSince1970: 1_767_225_600)
                ).user
            }
            // Reopening, and two instances migrating the same file at once, apply nothing twice and keep the data.
            try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
                #expect(try await store.user(id: written.id)?.appleUserID == written.appleUserID)
            }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await StoreHarness.withSQLiteStore(path: path) { try await $0.appliedSchemaVersion() }
                    }
                }
                for try await version in group { #expect(version == SQLAccountStore.schemaVersion) }
            }
        }
    }

    @Test func refreshTokensHaveNoAccountKey() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { try await RefreshTokenKeyScenario.check($0) }
        }
    }

    @Test func aStoreOpenAcrossVersion7KeepsWorking() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await RefreshTokenKeyScenario.upgradeWhileOpen { body in
                try await StoreHarness.withSQLiteStore(path: path, body)
            }
        }
    }

    /// A refresh tokens' table not as version 1 defined it (edited by hand) stops the upgrade with a clear error and
    /// leaves the file at version 6, whole.
    @Test func version7RefusesATokenTableItDidNotWrite() async throws {
        try await StoreHarness.withSQLitePath { path in
            _ = try await RefreshTokenKeyScenario.atVersion6 {
                try await StoreHarness.withSQLiteStore(path: path) {
                    try await RefreshTokenKeyScenario.writeVersion6Tokens($0)
                }
            }
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                for statement in [
                    "DROP TABLE refresh_tokens",
                    """
                    CREATE TABLE refresh_tokens (hash TEXT NOT NULL PRIMARY KEY, session_id TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES users (id), issued_at BIGINT NOT NULL,
                        expires_at BIGINT NOT NULL, used_at BIGINT, last_checked_at BIGINT)
                    """,
                    "CREATE INDEX refresh_tokens_by_user ON refresh_tokens (user_id)",
                ] {
                    _ = try await connection.query(statement, [])
                }
                try await connection.close().get()
            } catch {
                try await connection.close().get()
                throw error
            }
            let error = await #expect(throws: StoreError.self) {
                try await StoreHarness.withSQLiteStore(path: path) { _ in }
            }
            #expect(error?.code == .corrupt)
            #expect(error?.reason.contains("refresh_tokens") == true && error?.reason.contains("backup") == true)
            try await RefreshTokenKeyScenario.atVersion6 {
                try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                    #expect(try await store.appliedSchemaVersion() == 6)
                    #expect(try await RefreshTokenKeyScenario.integrityCheck(store) == ["ok"])
                }
            }
        }
    }

    /// Version 7 edits the refresh tokens' table definition in place: every row keeps every column, also a token
    /// whose session is gone (written here as the `sqlite3` shell would, with foreign keys off), which a copy into a
    /// table with the session's key would have refused; the file stays whole, and the writer's statements work on it.
    @Test func version7KeepsEveryTokenAsItWas() async throws {
        try await StoreHarness.withSQLitePath { path in
            var written = try await RefreshTokenKeyScenario.atVersion6 {
                try await StoreHarness.withSQLiteStore(path: path) {
                    try await RefreshTokenKeyScenario.writeVersion6Tokens($0)
                }
            }
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                _ = try await connection.query(
                    """
                    INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
                    VALUES ('00-orphan', 'no-such-session', 'no-such-user', 1, 2)
                    """,
                    []
                )
                try await connection.close().get()
            } catch {
                try await connection.close().get()
                throw error
            }
            written.insert(
                .init(
                    hash: "00-orphan",
                    sessionID: "no-such-session",
                    userID: "no-such-user",
                    issuedAt: 1,
                    expiresAt: 2
                ),
                at: 0
            )
            try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
                #expect(try await RefreshTokenKeyScenario.tokenRows(store) == written)
                #expect(try await RefreshTokenKeyScenario.integrityCheck(store) == ["ok"])
                try await RefreshTokenKeyScenario.check(store)
            }
        }
    }

    @Test func aVersion4DatabaseIsUpgradedInPlace() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await UpgradeScenario.atVersion4 {
                try await StoreHarness.withSQLiteStore(path: path) { try await UpgradeScenario.writeVersion4Data($0) }
            }
            try await StoreHarness.withSQLiteStore(path: path) { try await UpgradeScenario.checkUpgraded($0) }
        }
    }

    @Test func concurrentMigrationsOfANewFileCreateTheSchemaOnce() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await StoreHarness.withSQLiteStore(path: path) { try await $0.appliedSchemaVersion() }
                    }
                }
                for try await version in group { #expect(version == SQLAccountStore.schemaVersion) }
            }
        }
    }

    @Test func aDatabaseFromANewerSiwaIsRefused() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { _ in }
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                _ = try await connection.query("INSERT INTO schema_version (version) VALUES (9999)", [])
                try await connection.close().get()
            } catch {
                try await connection.close().get()
                throw error
            }
            let error = await #expect(throws: StoreError.self) {
                try await SQLAccountStore.sqlite(path: path, logger: StoreHarness.quietLogger)
            }
            #expect(error?.code == .newerSchema, "a newer schema is not migrated down or overwritten")
            #expect(error?.reason.contains("from a newer siwa") == true, "\(String(describing: error))")
        }
    }

    /// A store opened as it is, for `siwa doctor`, creates no file and migrates nothing: it opens a current database
    /// only.
    @Test func aStoreOpenedAsItIsChangesNothing() async throws {
        try await StoreHarness.withSQLitePath { path in
            let missing = await #expect(throws: StoreError.self) {
                try await SQLAccountStore.existingSQLite(path: path, logger: StoreHarness.quietLogger)
            }
            #expect(missing?.code == .unavailable)
            #expect(!FileManager.default.fileExists(atPath: path), "no file is created")

            try await UpgradeScenario.atVersion4 { try await StoreHarness.withSQLiteStore(path: path) { _ in } }
            let old = await #expect(throws: StoreError.self) {
                try await SQLAccountStore.existingSQLite(path: path, logger: StoreHarness.quietLogger)
            }
            #expect(
                old?.code == .unavailable && old?.reason.contains("siwa migrate") == true,
                "\(String(describing: old))"
            )
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            let rows = try await connection.query("SELECT MAX(version) AS version FROM schema_version", [])
            try await connection.close().get()
            #expect(rows.first?.column("version")?.integer == 4, "the database is not migrated")

            try await StoreHarness.withSQLiteStore(path: path) { _ in }
            let store = try await SQLAccountStore.existingSQLite(path: path, logger: StoreHarness.quietLogger)
            let version = try await store.appliedSchemaVersion()
            await store.shutdown()
            #expect(version == SQLAccountStore.schemaVersion)
        }
    }

    @Test func theFileIsInWALMode() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                try await store.saveServerNonce(hash: Array(repeating: 7, count: 32), expiresAt: Date())
                #expect(FileManager.default.fileExists(atPath: path + "-wal"), "WAL mode keeps a -wal file")
            }
        }
    }

    @Test func theDatabaseFilesAreReadableByTheirOwnerOnly() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                try await store.saveServerNonce(hash: Array(repeating: 7, count: 32), expiresAt: Date())
                for file in [path, path + "-wal", path + "-shm"] {
                    let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
                    #expect(mode == 0o600, "\(file) is \(String(mode ?? 0, radix: 8)), not 600")
                }
            }
        }
    }

    @Test func theSingleStatementSignInAndRefreshLeaveNothingInTheFile() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { store async throws -> Void in
                let facts = AppleSignInFacts(appleUserID: AppleUserID("001.temp.1"), clientID: "com.example.app")
                let now = Date(timeIntervalSince1970: 1_767_225_600)
                var hashes: [[UInt8]] = []
                for index in 0..<3 {
                    let hash = Array(repeating: UInt8(index + 1), count: 32)
                    hashes.append(hash)
                    let session = NewSession(
                        sessionID: SessionID(),
                        refreshTokenHash: hash,
                        issuedAt: now,
                        expiresAt: now.addingTimeInterval(3_600)
                    )
                    _ = try await store.signIn(facts, startingSession: session, now: now)
                }
                let next = RefreshTokenRecord(
                    hash: Array(repeating: 9, count: 32),
                    sessionID: SessionID(),
                    userID: UserID(),
                    issuedAt: now,
                    expiresAt: now.addingTimeInterval(3_600)
                )
                guard case .rotated = try await store.rotateRefreshToken(presentedHash: hashes[0], next: next, now: now)
                else {
                    Issue.record("the returning user's session rotates")
                    return
                }
            }
            // The views and triggers behind them are temporary, per connection: the file's schema has none of them.
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            let rows: [SQLiteRow]
            do {
                rows = try await connection.query(
                    "SELECT name FROM sqlite_master WHERE name LIKE 'returning_sign_in%' OR name LIKE 'refresh_rotation%'"
                )
                try await connection.close().get()
            } catch {
                try await connection.close().get()
                throw error
            }
            #expect(rows.isEmpty)
        }
    }

    @Test func aFileThatCannotBeOpenedIsUnavailable() async throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("siwa-missing-\(UUID().uuidString)/siwa.sqlite").path
        await #expect(throws: StoreError.unavailable) {
            try await SQLAccountStore.sqlite(path: path, logger: StoreHarness.quietLogger)
        }
    }

    @Test func aStoreThatIsShutDownIsUnavailable() async throws {
        try await StoreHarness.withSQLitePath { path in
            let store = try await SQLAccountStore.sqlite(path: path, logger: StoreHarness.quietLogger)
            await store.shutdown()
            await #expect(throws: StoreError.unavailable) { try await store.ping() }
            await store.shutdown()
        }
    }

    @Test func logsHoldNoHashesOrKeys() async throws {
        let (logger, recording) = LogRecording.logger()
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path, logger: logger) { store in
                try await SecretsScenario.run(store, recording: recording)
            }
        }
    }
}
