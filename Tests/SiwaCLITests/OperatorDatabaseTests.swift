import AccountStore
import Foundation
import Logging
import SiwaTesting
import Testing

@testable import AccountStoreSQL
@testable import SiwaCLI

/// The operator's commands act on the service's database and say which, or refuse: the PostgreSQL URL from a file the
/// configuration names (as `siwa serve` reads it), never a SQLite file guessed from the current folder once a
/// configuration is given; and the schema version is read before anything is written, by `migrate`, doctor and serve
/// alike.
@Suite("The operator's database")
struct OperatorDatabaseTests {
    let folder = try! TemporaryFolder("siwa-operator-db")

    /// No `SIWA_*` variable of the test run's own.
    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") }
        environment["NO_COLOR"] = "1"
        return environment
    }

    private func siwa(_ arguments: [String], _ extra: [String: String] = [:]) async throws -> SiwaProcess.Result {
        let (status, out, errors) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: arguments,
            environment: environment.merging(arguments.first == "doctor" ? SiwaProcess.unboundListeners : [:]) { $1 }
                .merging(extra) { $1 },
            directory: folder.path
        )
        return SiwaProcess.Result(
            status: status,
            stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: errors, as: UTF8.self)
        )
    }

    /// The guide's set-up: the URL in a file of its own that `siwa.json` names; every command, doctor's first, reads
    /// it, names the database on its first line (without the password) and leaves no SQLite file behind.
    @Test(.enabled(if: testPostgresURL != nil, "needs scripts/with-postgres"))
    func theURLFileTheConfigurationNamesIsEveryCommandsDatabase() async throws {
        try await withFreshPostgresDatabase(testPostgresURL!, prefix: "siwa_operator_") { url in
            let password = try #require(URLComponents(string: url)?.password)
            let urlFile = try folder.write("database-url", url + "\n")
            _ = try folder.write(
                "siwa.json",
                #"{"bundleIDs": ["com.example.app"], "dataKeyFile": "siwa-data.key", "database": {"urlFile": "\#(urlFile)"}}"#
            )
            let shown = "PostgreSQL " + ServerSettings.shown(postgresURL: url) + " (SIWA_DATABASE_URL_FILE)"
            #expect(!shown.contains(password))

            let migrated = try await siwa(["migrate", "--config", "siwa.json"])
            #expect(migrated.status == 0, "\(migrated.stderr)")
            #expect(migrated.stderr.hasPrefix("database: \(shown)\n"), "\(migrated.stderr)")
            #expect(migrated.stdout.contains("created the schema"), "\(migrated.stdout)")
            for command in [
                ["users", "list"], ["keys", "data-keys"], ["keys", "rotate"], ["admin", "tokens", "list"],
            ] {
                let result = try await siwa(command + ["--config", "siwa.json"])
                #expect(result.status == 0, "\(command): \(result.stderr)")
                #expect(result.stderr.hasPrefix("database: \(shown)\n"), "\(command): \(result.stderr)")
                #expect(!(result.stdout + result.stderr).contains(password))
            }
            let doctor = try await siwa(["doctor", "--config", "siwa.json"])
            let place = ServerSettings.shown(postgresURL: url)
            #expect(
                doctor.stdout.contains("✓ SIWA_DATABASE_URL_FILE: PostgreSQL \(place): connects"),
                "\(doctor.stdout)"
            )
            #expect(doctor.stdout.contains("SIWA_DATABASE_URL_FILE: the schema is current"), "\(doctor.stdout)")
            #expect(!doctor.stdout.contains(password))
            #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("siwa.sqlite").path))
        }
    }

    /// A configuration that names no database, with a leftover `siwa.sqlite` in the folder: the operator commands
    /// refuse (the data-key rotation re-seals nothing, migrate creates nothing) and doctor warns, naming the file.
    @Test func aConfigurationWithoutADatabaseIsNoLicenceToGuess() async throws {
        _ = try folder.write("siwa.json", #"{"bundleIDs": ["com.example.app"], "dataKeyFile": "siwa-data.key"}"#)
        let leftover = try await siwa(["migrate", "--database", "siwa.sqlite"])
        #expect(leftover.status == 0, "\(leftover.stderr)")
        let keyFile = folder.url.appendingPathComponent("siwa-data.key").path
        let keys = try String(contentsOfFile: keyFile, encoding: .utf8)

        for command in [["users", "list"], ["keys", "rotate-data-key", "--yes"], ["migrate"]] {
            let refused = try await siwa(command + ["--config", "siwa.json"])
            #expect(refused.status == 2, "\(command): \(refused.stderr)")
            #expect(
                refused.stderr.contains("error: --config: siwa.json names no database (database.path, database.url"),
                "\(command): \(refused.stderr)"
            )
        }
        #expect(try String(contentsOfFile: keyFile, encoding: .utf8) == keys, "the data key file was rewritten")
        let elsewhere = try await siwa(["migrate", "--config", "siwa.json"], ["SIWA_DATABASE_PATH": "named.sqlite"])
        #expect(elsewhere.status == 0, "a database named in the environment is named: \(elsewhere.stderr)")

        let doctor = try await siwa(["doctor", "--config", "siwa.json"])
        #expect(doctor.stdout.contains("! SIWA_DATABASE_PATH: siwa.json names no database"), "\(doctor.stdout)")
        #expect(doctor.status == 3, "\(doctor.stdout)")
    }

    /// With the service's configuration on the machine, a command given neither it nor a database refuses, naming it.
    @Test func aServiceConfigurationOnTheMachineIsNoLicenceToGuess() throws {
        let service = try folder.write("siwa.json", "{}")
        var settings = try ServerSettings.load(
            from: SettingsSource(environment: [:]),
            createsDataKey: false,
            purpose: .database
        )
        #expect {
            try settings.chooseOperatorDatabase(nil, createsDatabase: true, serviceConfiguration: service)
        } throws: { error in
            "\(error)".contains("\(service) exists") && "\(error)".contains("pass --config \(service)")
        }
        try settings.chooseOperatorDatabase("other.sqlite", createsDatabase: true, serviceConfiguration: service)
        #expect(settings.databasePath == "other.sqlite")
    }

    /// A URL file that is missing, given beside the URL, or holding no URL: refused naming the setting, and never
    /// repeating what the file holds.
    @Test func aURLFileThatCannotBeUsedIsNamed() async throws {
        let missing = try await siwa(["users", "list"], ["SIWA_DATABASE_URL_FILE": "/nonexistent/database-url"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("SIWA_DATABASE_URL_FILE: there is no file /nonexistent/database-url"))

        let file = try folder.write("database-url", "mysql://root:hunter2@db/siwa\n")
        let garbage = try await siwa(["users", "list"], ["SIWA_DATABASE_URL_FILE": file])
        #expect(garbage.status == 2)
        #expect(garbage.stderr.contains("SIWA_DATABASE_URL_FILE: \(file) must hold one line, postgres://"))
        #expect(!garbage.stderr.contains("hunter2"))

        let both = try await siwa(
            ["users", "list"],
            ["SIWA_DATABASE_URL_FILE": file, "SIWA_DATABASE_URL": "postgres://siwa:x@127.0.0.1:1/siwa"]
        )
        #expect(both.status == 2)
        #expect(both.stderr.contains("set the URL or its file, not both"), "\(both.stderr)")
    }

    /// `siwa migrate --dry-run` on a database an older siwa left (version 8) lists what would run and changes nothing;
    /// `siwa migrate` then applies exactly that.
    @Test func aDryRunListsTheVersionsAndChangesNothing() async throws {
        let path = folder.url.appendingPathComponent("old.sqlite").path
        try await SQLSchema.$migrationTarget.withValue(8) {
            let store = try await SQLAccountStore.sqlite(path: path, logger: Logger(label: "test"))
            await store.shutdown()
        }
        for _ in 0..<2 {
            let dry = try await siwa(["migrate", "--dry-run", "--json", "--database", path])
            #expect(dry.status == 0, "\(dry.stderr)")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
            #expect(answer["schema"] as? String == "would_upgrade" && answer["from"] as? String == "8", "\(answer)")
            let versions = (answer["migrations"] as? [[String: Any]])?.compactMap { $0["version"] as? Int }
            #expect(versions == Array(9...SQLAccountStore.schemaVersion), "\(answer)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("siwa-data.key").path))
        let text = try await siwa(["migrate", "--dry-run", "--database", path])
        #expect(text.stdout.contains("would upgrade the schema from version 8 to \(SQLAccountStore.schemaVersion)"))
        #expect(text.stdout.contains("  11 (0.4.0): The admin API's service tokens"), "\(text.stdout)")

        let applied = try await siwa(["migrate", "--json", "--database", path])
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(applied.stdout.utf8)) as? [String: Any])
        #expect(answer["schema"] as? String == "upgraded" && answer["from"] as? String == "8", "\(answer)")
        let created = try await siwa(["migrate", "--dry-run", "--database", "new.sqlite"])
        #expect(created.stdout.hasPrefix("would create the schema"), "\(created.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("new.sqlite").path))
    }

    /// `docs/schema.md` is what `siwa migrate --reference` prints from the migrations, so that it cannot go stale.
    @Test func theSchemaVersionsAreGeneratedFromTheMigrations() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let committed = try String(contentsOf: root.appendingPathComponent("docs/schema.md"), encoding: .utf8)
        let printed = try await siwa(["migrate", "--reference"])
        #expect(printed.status == 0)
        #expect(
            printed.stdout == committed,
            "docs/schema.md is stale: regenerate it with `.build/debug/siwa migrate --reference > docs/schema.md`"
        )
        #expect(printed.stdout.contains("| \(SQLAccountStore.schemaVersion) |"))
        #expect(SQLAccountStore.schemaMigrations.map(\.version) == Array(1...SQLAccountStore.schemaVersion))
    }

    /// A PostgreSQL restore drops siwa's tables and functions by name before it loads a backup: the names are every
    /// one a migrated database holds, so that none of a newer schema is left behind.
    @Test(.enabled(if: testPostgresURL != nil, "needs scripts/with-postgres"))
    func theRestoreDropsEveryTableAndFunctionOfTheSchema() async throws {
        try await withFreshPostgresDatabase(testPostgresURL!, prefix: "siwa_objects_") { url in
            let store = try await SQLAccountStore.postgres(url: url, logger: Logger(label: "test"))
            await store.shutdown()
            let tables = try await postgresTexts(
                url,
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()"
            )
            #expect(Set(tables) == Set(SQLSchema.tableNames).subtracting(["client_consents"]), "\(tables)")
            let functions = try await postgresTexts(
                url,
                """
                SELECT proname::text FROM pg_proc JOIN pg_namespace ON pg_namespace.oid = pronamespace
                WHERE nspname = current_schema()
                """
            )
            #expect(Set(functions) == Set(SQLSchema.functionNames), "\(functions)")
            for statement in SQLAccountStore.postgresDropStatements {
                try await runPostgresStatement(url, statement)
            }
            let left = try await postgresTexts(
                url,
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()"
            )
            #expect(left.isEmpty, "\(left)")
        }
    }

    /// A database a newer siwa upgraded: doctor says serve would refuse, serve refuses before it writes a data key,
    /// and migrate changes nothing and calls it newer, not corrupt. On SQLite, and with the URL file on PostgreSQL.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "needs the sqlite3 shell"))
    func aDatabaseFromANewerSiwaIsRefusedAlikeAndNothingIsWritten() async throws {
        let path = folder.url.appendingPathComponent("newer.sqlite").path
        let store = try await SQLAccountStore.sqlite(path: path, logger: Logger(label: "test"))
        await store.shutdown()
        let (status, _, errors) = try await runChildProcess(
            "/usr/bin/sqlite3",
            arguments: [path, "INSERT INTO schema_version (version) VALUES (99)"]
        )
        #expect(status == 0, "\(String(decoding: errors, as: UTF8.self))")
        try await expectNewerSchemaRefused(["SIWA_DATABASE_PATH": path], setting: "SIWA_DATABASE_PATH")
    }

    @Test(.enabled(if: testPostgresURL != nil, "needs scripts/with-postgres"))
    func aPostgresDatabaseFromANewerSiwaIsRefusedAlike() async throws {
        try await withFreshPostgresDatabase(testPostgresURL!, prefix: "siwa_newer_") { url in
            let store = try await SQLAccountStore.postgres(url: url, logger: Logger(label: "test"))
            await store.shutdown()
            try await runPostgresStatement(url, "INSERT INTO schema_version (version) VALUES (99)")
            let urlFile = try folder.write("database-url", url)
            try await expectNewerSchemaRefused(["SIWA_DATABASE_URL_FILE": urlFile], setting: "SIWA_DATABASE_URL_FILE")
        }
    }

    private func expectNewerSchemaRefused(_ database: [String: String], setting: String) async throws {
        let settings = database.merging([
            "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_DATA_KEY_FILE": "siwa-data.key",
            "SIWA_PORT": String(try freeLoopbackPort(in: 10_000..<20_000)), "SIWA_METRICS_PORT": "0",
        ]) { $1 }
        let reason = SQLAccountStore.newerSchemaReason(99)
        let doctor = try await siwa(["doctor"], settings)
        #expect(doctor.status == 1, "\(doctor.stdout)")
        #expect(doctor.stdout.contains("✗ \(setting): \(reason)"), "\(doctor.stdout)")

        let serve = try await siwa(["serve"], settings)
        #expect(serve.status == 2, "\(serve.stderr)")
        #expect(serve.stderr.contains("error: \(setting): \(reason)"), "\(serve.stderr)")

        for arguments in [["migrate"], ["migrate", "--dry-run"]] {
            let migrate = try await siwa(arguments, settings)
            #expect(migrate.status == 2, "\(arguments): \(migrate.stderr)")
            #expect(migrate.stderr.contains("error: \(setting): \(reason)"), "\(arguments): \(migrate.stderr)")
            #expect(!migrate.stderr.contains("corrupt"))
        }
        #expect(
            !FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("siwa-data.key").path),
            "a data key was created for a database this siwa refuses"
        )
    }
}
