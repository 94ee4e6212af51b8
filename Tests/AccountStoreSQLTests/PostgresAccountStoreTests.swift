import AccountStore
import AccountStoreSQL
import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The SQL store on PostgreSQL (`SIWA_TEST_POSTGRES_URL`; `scripts/test` starts a private server and sets it): the
/// conformance suite in a new schema per check, two instances on one schema, repeated migrations.
@Suite(
    .enabled(
        if: StoreHarness.postgresURL != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    )
)
struct PostgresAccountStoreTests {
    @Test(arguments: AccountStoreConformance.checks)
    func conformance(_ check: AccountStoreConformance.Check) async throws {
        try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema()) { store in
            try await check.run(store)
        }
    }

    @Test func aSecondInstanceOnTheSameDatabaseReadsTheFirstOnesData() async throws {
        let schema = StoreHarness.freshSchema()
        try await StoreHarness.withPostgresStore(schema: schema) { first in
            try await StoreHarness.withPostgresStore(schema: schema) { second in
                try await SharedDatabaseScenario.run(writer: first, reader: second)
            }
        }
    }

    @Test func migrationsAreIdempotentAlsoWhenConcurrent() async throws {
        let schema = StoreHarness.freshSchema()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await StoreHarness.withPostgresStore(schema: schema) { try await $0.appliedSchemaVersion() }
                }
            }
            for try await version in group { #expect(version == SQLAccountStore.schemaVersion) }
        }
        try await StoreHarness.withPostgresStore(schema: schema) { store async throws -> Void in
            #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
            try await store.ping()
        }
    }

    @Test func refreshTokensHaveNoAccountKey() async throws {
        try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema()) {
            try await RefreshTokenKeyScenario.check($0)
        }
    }

    @Test func aStoreOpenAcrossVersion7KeepsWorking() async throws {
        let schema = StoreHarness.freshSchema()
        try await RefreshTokenKeyScenario.upgradeWhileOpen { body in
            try await StoreHarness.withPostgresStore(schema: schema, body)
        }
    }

    /// Version 7 drops a constraint: every column of the tokens keeps its value.
    @Test func version7KeepsEveryColumnOfTheTokens() async throws {
        let schema = StoreHarness.freshSchema()
        let written = try await RefreshTokenKeyScenario.atVersion6 {
            try await StoreHarness.withPostgresStore(schema: schema) {
                try await RefreshTokenKeyScenario.writeVersion6Tokens($0)
            }
        }
        try await StoreHarness.withPostgresStore(schema: schema) { store async throws -> Void in
            #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
            #expect(try await RefreshTokenKeyScenario.tokenRows(store) == written)
        }
    }

    @Test func aVersion4DatabaseIsUpgradedInPlace() async throws {
        let schema = StoreHarness.freshSchema()
        try await UpgradeScenario.atVersion4 {
            try await StoreHarness.withPostgresStore(schema: schema) { try await UpgradeScenario.writeVersion4Data($0) }
        }
        try await StoreHarness.withPostgresStore(schema: schema) { try await UpgradeScenario.checkUpgraded($0) }
    }

    /// A store opened as it is, for `siwa doctor`, migrates nothing: it opens a current database only.
    @Test func aStoreOpenedAsItIsChangesNothing() async throws {
        let url = try #require(StoreHarness.postgresURL)
        let schema = StoreHarness.freshSchema()
        let empty = await #expect(throws: StoreError.self) {
            try await SQLAccountStore.existingPostgres(url: url, schema: schema, logger: StoreHarness.quietLogger)
        }
        #expect(empty?.code == .unavailable && empty?.reason.contains("schema version 0") == true)

        try await UpgradeScenario.atVersion4 { try await StoreHarness.withPostgresStore(schema: schema) { _ in } }
        let old = await #expect(throws: StoreError.self) {
            try await SQLAccountStore.existingPostgres(url: url, schema: schema, logger: StoreHarness.quietLogger)
        }
        #expect(old?.reason.contains("schema version 4") == true, "\(String(describing: old))")

        try await StoreHarness.withPostgresStore(schema: schema) { _ in }
        let store = try await SQLAccountStore.existingPostgres(
            url: url,
            schema: schema,
            logger: StoreHarness.quietLogger
        )
        let version = try await store.appliedSchemaVersion()
        await store.shutdown()
        #expect(version == SQLAccountStore.schemaVersion)
    }

    @Test func aWrongPasswordIsUnavailableAndNotRepeated() async throws {
        let original = try #require(StoreHarness.postgresURL)
        var components = try #require(URLComponents(string: original))
        components.password = "wrong-password-4711"
        let url = try #require(components.string)
        let (logger, recording) = LogRecording.logger()
        let error = await #expect(throws: StoreError.self) {
            try await SQLAccountStore.postgres(url: url, maximumConnections: 2, logger: logger)
        }
        #expect(error?.code == .unavailable)
        #expect(error?.reason.contains("wrong-password-4711") == false, "the error does not repeat the password")
        #expect(!recording.lines.joined().contains("wrong-password-4711"), "the logs do not hold the password")
    }

    @Test func logsHoldNoHashesKeysOrPassword() async throws {
        let (logger, recording) = LogRecording.logger()
        let original = try #require(StoreHarness.postgresURL)
        let password = URLComponents(string: original)?.password
        try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema(), logger: logger) { store in
            try await SecretsScenario.run(store, recording: recording, alsoAbsent: password.map { [$0] } ?? [])
        }
    }
}

/// Opening a PostgreSQL store without a server: these need no database.
@Suite struct PostgresStoreOpeningTests {
    @Test func aURLThatIsNotPostgresIsInvalidInputAndNotRepeated() async throws {
        let error = await #expect(throws: StoreError.self) {
            try await SQLAccountStore.postgres(url: "mysql://user:s3cret@host/db", logger: StoreHarness.quietLogger)
        }
        #expect(error?.code == .invalidInput)
        #expect(error?.reason.contains("s3cret") == false)
    }

    @Test func aSchemaNameMustBeAnIdentifier() async throws {
        await #expect(throws: StoreError.invalidInput) {
            try await SQLAccountStore.postgres(
                url: "postgres://user:pw@127.0.0.1:1/db?sslmode=disable",
                schema: "x\"; DROP TABLE users; --",
                logger: StoreHarness.quietLogger
            )
        }
    }

    @Test func aServerThatIsNotThereIsUnavailable() async throws {
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        await #expect(throws: StoreError.unavailable) {
            try await SQLAccountStore.postgres(
                url: "postgres://user:pw@127.0.0.1:1/db?sslmode=disable",
                maximumConnections: 2,
                logger: StoreHarness.quietLogger
            )
        }
    }
}
