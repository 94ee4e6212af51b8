import AccountStore
import AccountStoreSQL
import AppleSignIn
import AppleSignInAsyncHTTPClient
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `--config` and `--database`, on every command that opens the database.
struct StoreOptions: ParsableArguments {
    @Option(help: "A configuration file (.json, .yaml, or KEY=value lines), as siwa serve reads. Default: SIWA_CONFIG.")
    var config: String?

    @Option(
        help: """
            The database: a postgres:// URL or a SQLite file. Default: the configured one, else \
            \(SettingsCatalog.declared.storage.databasePath.defaultText), else the \(ServerSettings.demoDatabasePath) \
            that siwa demo left in this folder.
            """
    )
    var database: String?
}

/// Opens the configured store (running its migrations), runs `body`, closes the store.
func withConfiguredStore<R>(
    _ options: StoreOptions,
    needsDataKey: Bool = false,
    _ body: (ServerSettings, any AccountStore) async throws -> R
) async throws -> R {
    try await withConfiguredStoreAndSchema(options, createsDatabase: false, needsDataKey: needsDataKey) {
        settings,
        store,
        _ in try await body(settings, store)
    }
}

/// The same, also given the schema version the database had when opened (0: just created).
/// - Parameters:
///   - createsDatabase: `false` refuses a SQLite file that does not exist (a typo would otherwise list an empty new
///     database); only `siwa migrate` creates one.
///   - needsDataKey: the command unseals or seals (signing keys, Apple tokens): the data key must exist, since a new
///     one could not open what the old one sealed.
func withConfiguredStoreAndSchema<R>(
    _ options: StoreOptions,
    createsDatabase: Bool,
    needsDataKey: Bool = false,
    _ body: (ServerSettings, any AccountStore, _ foundSchemaVersion: Int) async throws -> R
) async throws -> R {
    let (settings, logger) = try await operatorSettings(
        options,
        createsDatabase: createsDatabase,
        needsDataKey: needsDataKey
    )
    let opened = try await StoreFactory.open(settings, logger: logger, checksDataKey: needsDataKey)
    do {
        let result = try await body(settings, opened.store, opened.foundSchemaVersion)
        await opened.close()
        return result
    } catch {
        await opened.close()
        throw error
    }
}

/// The settings of an operator command, with its database chosen (``ServerSettings/chooseOperatorDatabase(_:createsDatabase:serviceConfiguration:)``)
/// and named on standard error as its first line, and the logger it logs with. A setting that cannot be used is said
/// there and exits 2.
/// - Parameters:
///   - createsDatabase: `siwa migrate`: a SQLite file that does not exist is created, and a data key with it.
///   - createsDataKey: whether a missing data-key file is created (by default, when the database is).
///   - needsDataKey: the command seals or unseals: a data key must exist.
func operatorSettings(
    _ options: StoreOptions,
    createsDatabase: Bool,
    createsDataKey: Bool? = nil,
    needsDataKey: Bool = false
) async throws -> (ServerSettings, Logger) {
    // Only the command that sets a database up creates a data key with it.
    var settings = try await ServerSettings.loadOrExit(
        configFile: options.config,
        purpose: .database,
        createsDataKey: createsDataKey ?? createsDatabase
    )
    // The command prints its own answer on stdout: only warnings on stderr, unless SIWA_LOG_LEVEL asks for more.
    let logger = Logger.siwa(level: settings.logLevelIsSet ? settings.logLevel : .warning, format: settings.logFormat)
    do {
        try settings.chooseOperatorDatabase(options.database, createsDatabase: createsDatabase)
        if needsDataKey, !settings.dataKeyFound {
            throw ServerSettings.Problem(
                variable: "SIWA_DATA_KEY",
                fix:
                    "no data key found (neither SIWA_DATA_KEY nor \(settings.dataKeyFile)): this command needs the key "
                    + "siwa serve uses; run it where siwa serve runs, or set SIWA_DATA_KEY or SIWA_DATA_KEY_FILE"
            )
        }
    } catch let problem as ServerSettings.Problem {
        Terminal.error("error: \(problem)")
        throw ExitCode(2)
    }
    // Which database the command acts on, before anything else: on standard error, so that --json stays one document.
    Terminal.error("database: \(settings.databaseDescription)")
    return (settings, logger)
}

/// `siwa migrate`: applies the store's migrations (they also run when the server starts); `--dry-run` says which.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or upgrade the database schema (SIWA_DATABASE_PATH or SIWA_DATABASE_URL).",
        discussion: """
            Applies, in one transaction, every schema version the database lacks (docs/schema.md lists them). \
            --dry-run prints them, each with what it changes, and changes nothing. On a database a newer siwa \
            upgraded it changes nothing and exits 2: run that siwa, or restore the backup taken before the upgrade.

            Example:
              siwa migrate --config /etc/siwa/siwa.json --dry-run
              SIWA_DATABASE_URL=postgres://siwa:secret@127.0.0.1:5432/siwa siwa migrate
            """
    )

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print the schema versions that would be applied, and change nothing.")
    var dryRun = false

    @Flag(help: "Print every schema version as Markdown (docs/schema.md) and exit.")
    var reference = false

    @Flag(help: "Print JSON.")
    var json = false

    /// The `--json` answer.
    struct Output: Encodable {
        var database: String
        /// `created`, `upgraded` or `current`; with `--dry-run`, `would_create`, `would_upgrade` or `current`.
        var schema: String
        var from: String
        var version: String
        /// The versions applied, or with `--dry-run` those that would be.
        var migrations: [Migration]

        struct Migration: Encodable {
            var version: Int
            var release: String
            var summary: String
        }
    }

    /// `docs/schema.md`: every schema version, from the migrations themselves.
    static var schemaReference: String {
        var text = """
            # Schema versions

            Generated from siwa's migrations by `siwa migrate --reference > docs/schema.md`; a test compares the two. \
            Each version is applied once, in order, in one transaction, when `siwa serve` or `siwa migrate` opens \
            a database that lacks it; `siwa migrate --dry-run` lists those a database lacks and changes nothing. \
            A siwa refuses a database whose version is newer than its own. No migration is undone in place: to go \
            back to an older siwa, restore the backup taken before the upgrade \
            ([deploy.md, section 8](deploy.md#8-upgrades)).

            | version | release | what it changes |
            |---|---|---|

            """
        for migration in SQLAccountStore.schemaMigrations {
            text += "| \(migration.version) | \(migration.release) | \(migration.summary) |\n"
        }
        return text
    }

    func run() async throws {
        if reference {
            print(Self.schemaReference, terminator: "")
            return
        }
        var (settings, logger) = try await operatorSettings(self.store, createsDatabase: true, createsDataKey: false)
        // Read first, so that a database this siwa must not touch gets no data key and no new file.
        let found: Int
        do {
            found = try await StoreFactory.schemaVersion(settings, logger: logger)
        } catch {
            Terminal.error("error: \(settings.databaseSettingName): \(error.reason)")
            throw ExitCode(error.code == .newerSchema ? 2 : 1)
        }
        let current = SQLAccountStore.schemaVersion
        guard found <= current else {
            Terminal.error("error: \(settings.databaseSettingName): \(SQLAccountStore.newerSchemaReason(found))")
            throw ExitCode(2)
        }
        let pending = SQLAccountStore.schemaMigrations.filter { $0.version > found }
        if dryRun {
            report(found: found, pending: pending, applied: false, settings: settings)
            return
        }
        do {
            try settings.readOrCreateDataKeys()
        } catch let problem as ServerSettings.Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        }
        let opened = try await StoreFactory.open(settings, logger: logger)
        let before = opened.foundSchemaVersion
        await opened.close()
        report(
            found: before,
            pending: SQLAccountStore.schemaMigrations.filter { $0.version > before },
            applied: true,
            settings: settings
        )
    }

    private func report(
        found: Int,
        pending: [SQLAccountStore.SchemaMigration],
        applied: Bool,
        settings: ServerSettings
    ) {
        let database = settings.databaseURL == nil ? settings.databasePath : "PostgreSQL"
        let current = SQLAccountStore.schemaVersion
        let schema =
            pending.isEmpty
            ? "current"
            : found == 0
                ? (applied ? "created" : "would_create")
                : (applied ? "upgraded" : "would_upgrade")
        if json {
            let output = Output(
                database: database,
                schema: schema,
                from: String(found),
                version: String(current),
                migrations: pending.map { .init(version: $0.version, release: $0.release, summary: $0.summary) }
            )
            print((try? UsersCommand.json(output)) ?? "{}")
            return
        }
        switch schema {
        case "current": print("the schema is current, version \(current) (\(database))")
        case "created": print("created the schema, version \(current) (\(database))")
        case "upgraded": print("upgraded the schema from version \(found) to \(current) (\(database))")
        case "would_create": print("would create the schema, version \(current) (\(database)); nothing changed:")
        default: print("would upgrade the schema from version \(found) to \(current) (\(database)); nothing changed:")
        }
        guard !applied else { return }
        for migration in pending {
            print("  \(migration.version) (\(migration.release)): \(migration.summary)")
        }
    }
}

/// `siwa keys rotate`: a new signing key for access tokens; the old one keeps verifying until its tokens expire. The
/// data-key commands are in `KeysCommand+DataKeys.swift`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage siwa's keys: the signing keys of access tokens, and the data keys that seal secrets at rest.",
        discussion: """
            Example:
              siwa keys rotate --json
              siwa keys data-keys
              siwa keys rotate-data-key
            """,
        subcommands: [Rotate.self, DataKeys.self, RotateDataKey.self, RetireDataKey.self]
    )

    struct KeysAnswer: Encodable {
        var currentKey: String?
        var storedKeys: Int
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Add a new current signing key; the previous one keeps verifying until its tokens have expired.",
            discussion: """
                Every running instance picks the new key up within seconds.

                Example:
                  siwa keys rotate
                """
        )

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await withConfiguredStore(self.store, needsDataKey: true) { settings, store in
                let issuer = try await AccessTokenIssuer(
                    configuration: settings.server,
                    store: store,
                    sealer: settings.makeDataSealer(logger: Logger(label: "siwa")),
                    clock: SystemWallClock()
                )
                try await issuer.rotate()
                let keys = try await store.signingKeys()
                if json {
                    print(try UsersCommand.json(KeysAnswer(currentKey: keys.last?.kid, storedKeys: keys.count)))
                } else {
                    print("current key: \(keys.last?.kid ?? "none") (\(keys.count) key(s) stored)")
                }
            }
        }
    }
}

/// `siwa users list|show|delete|disable|enable`: look at, delete, disable and enable accounts.
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "List, show, delete, disable and enable accounts.",
        discussion: """
            An account is named by its siwa id, its Apple user id (sub) or its email (ignoring case; delete, disable \
            and enable need the email to be unique).

            Example:
              siwa users list --limit 20
              siwa users show ann@example.com
              siwa users disable 001234.abcdef0123456789abcdef0123456789.1234
            """,
        subcommands: [
            List.self, Show.self, Delete.self, Disable.self, Enable.self, GrantAdmin.self, RevokeAdmin.self,
            Admins.self,
        ]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List accounts, oldest first: siwa id, Apple user id (sub), email, name, status (active, disabled, "
                + "consent revoked or deleted), created.",
            discussion: "Example:\n  siwa users list --limit 20 --json"
        )

        @Option(help: "At most this many accounts.")
        var limit = 50

        @Option(help: "Start after the account with this id (paging).")
        var after: String?

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                let users = try await store.users(limit: limit, after: after.flatMap(UserID.init))
                if json {
                    print(try UsersCommand.json(users.map(AccountOutput.init)))
                } else {
                    for user in users {
                        let name = [user.givenName, user.familyName].compactMap { $0 }.joined(separator: " ")
                        let status = AccountOutput.status(of: user)
                        print(
                            "\(user.id)  \(user.appleUserID)  \(user.email ?? "-")  \(name.isEmpty ? "-" : name)  "
                                + "\(status)  \(user.createdAt)"
                        )
                    }
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an account, by siwa id, Apple user id (sub) or email.",
            discussion: """
                Prints the account as one JSON object, with its Apple user id (appleUserID, the sub) and its status \
                (active, disabled, consent_revoked or deleted). An email matches every \
                account with that email, ignoring case (several Apple IDs can share one): each is printed as one \
                JSON object on its own line, oldest first.

                Example:
                  siwa users show 001234.abcdef0123456789abcdef0123456789.1234
                  siwa users show ann@example.com
                """
        )

        @Argument(help: "A siwa user id, an Apple sub or an email.")
        var id: String

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON (the default output is JSON already; accepted for symmetry).")
        var json = false

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                let users = try await UsersCommand.accounts(named: id, store: store)
                guard !users.isEmpty else { throw UsersCommand.noAccount(id) }
                for user in users { print(try UsersCommand.json(AccountOutput(user))) }
            }
        }
    }

    /// The accounts `id` names: the one with this siwa id or Apple sub, else (for an email) every account with it.
    static func accounts(named id: String, store: any AccountStore) async throws -> [UserRecord] {
        if let userID = UserID(id), let user = try await store.user(id: userID) { return [user] }
        if let user = try await store.user(appleUserID: AppleUserID(id)) { return [user] }
        guard id.contains("@") else { return [] }
        return try await store.users(email: id)
    }

    /// The one account `id` names; when it names none or several (a shared email), says so and exits 1.
    static func account(named id: String, store: any AccountStore) async throws -> UserRecord {
        let users = try await accounts(named: id, store: store)
        guard users.count == 1, let user = users.first else {
            if users.isEmpty { throw noAccount(id) }
            Terminal.error(
                "error: \(users.count) accounts have the email \(id); name one by its siwa id: "
                    + users.map(\.id.description).joined(separator: ", ")
            )
            throw ExitCode(1)
        }
        return user
    }

    /// Opens the store and runs `body` with the one account `id` names (see ``account(named:store:)``).
    static func withAccount(
        named id: String,
        _ options: StoreOptions,
        needsDataKey: Bool = false,
        _ body: (ServerSettings, any AccountStore, UserRecord) async throws -> Void
    ) async throws {
        try await withConfiguredStore(options, needsDataKey: needsDataKey) { settings, store in
            try await body(settings, store, try await account(named: id, store: store))
        }
    }

    /// Says that `id` names no account; the command then exits with the answer (1).
    static func noAccount(_ id: String) -> ExitCode {
        Terminal.error("error: no account \(id)")
        return ExitCode(1)
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// An account as the operator commands print it: the API's `user` object with the Apple user id (`sub`) and the
/// status the console shows.
struct AccountOutput: Encodable {
    var user: UserResponse
    var appleUserID: String
    /// `active`, `disabled`, `consent_revoked` or `deleted` (``UserStatus``).
    var status: String
    var disabledAt: Date?
    var appleConsentRevokedAt: Date?

    init(_ record: UserRecord) {
        user = UserResponse(record)
        appleUserID = record.appleUserID.rawValue
        status = record.status.rawValue
        disabledAt = record.disabledAt
        appleConsentRevokedAt = record.appleConsentRevokedAt
    }

    /// The status in words, as the console writes it (`consent revoked`).
    static func status(of user: UserRecord) -> String { user.status.rawValue.replacingOccurrences(of: "_", with: " ") }

    private enum CodingKeys: String, CodingKey {
        case appleUserID, status, disabledAt, appleConsentRevokedAt
    }

    func encode(to encoder: any Encoder) throws {
        try user.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appleUserID, forKey: .appleUserID)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(disabledAt, forKey: .disabledAt)
        try container.encodeIfPresent(appleConsentRevokedAt, forKey: .appleConsentRevokedAt)
    }
}

extension UsersCommand {
    /// `siwa users delete`: what `DELETE /api/me` does, for operators.
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an account and revoke its Apple token at Apple (queued for retry if Apple is down).",
            discussion: """
                Deletes the account (or anonymises it when SIWA_ACCOUNT_DELETION_MODE=anonymise), ends its \
                sessions and revokes its Apple refresh token at Apple's /auth/revoke. When Apple cannot be reached \
                the revocation stays queued and a running `siwa serve` retries it.

                On a terminal it shows the account and asks before deleting; anything but y or yes deletes nothing \
                (exit 1). Without a terminal (a script) it deletes only with --yes, and otherwise refuses (exit 2).

                Example:
                  siwa users delete 6F1C2E4A-0B7D-4E8F-9A1B-2C3D4E5F6A7B --yes --json
                """
        )

        @Argument(help: "A siwa user id, an Apple sub or an email (of one account).")
        var id: String

        @Flag(name: [.customShort("y"), .long], help: "Delete without asking (needed when not on a terminal).")
        var yes = false

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        /// The `--json` answer.
        struct Output: Encodable {
            var id: String
            var mode: String
            var sessionsEnded: Int
            /// `revoked`, `queued` or `no_apple_token`.
            var appleRevocation: String
            var retryAt: Date?
            var reason: String?
        }

        func run() async throws {
            let confirmation = Confirmation(yes: yes, standardInputIsTerminal: Terminal.standardInputIsTerminal)
            guard confirmation != .refuse else {
                Terminal.error(
                    "error: standard input is not a terminal, so nobody can confirm: pass --yes to delete \(id)"
                )
                throw ExitCode(2)
            }
            try await UsersCommand.withAccount(named: id, self.store, needsDataKey: true) { settings, store, user in
                if confirmation == .ask {
                    let name = [user.givenName, user.familyName].compactMap { $0 }.joined(separator: " ")
                    Terminal.error(
                        "account \(user.id)\n  email: \(user.email ?? "-")\n  name:  \(name.isEmpty ? "-" : name)"
                    )
                    Terminal.prompt("Delete this account? [y/N] ")
                    guard Confirmation.accepts(readLine()) else {
                        Terminal.error("not deleted")
                        throw ExitCode(1)
                    }
                }
                var logger = Logger(label: "siwa")
                logger.logLevel = .error
                let output = try await Self.delete(
                    user.id,
                    json: json,
                    settings: settings,
                    store: store,
                    transport: AsyncHTTPClientTransport(),
                    logger: logger
                )
                guard let output else { throw UsersCommand.noAccount(id) }
                print(output)
            }
        }

        /// Deletes the account and tries the revocation at once; returns what to print, or `nil` for an unknown
        /// account.
        static func delete(
            _ userID: UserID,
            json: Bool,
            settings: ServerSettings,
            store: any AccountStore,
            transport: any HTTPTransport,
            clock: any WallClock = SystemWallClock(),
            logger: Logger
        ) async throws -> String? {
            let apple = settings.makeAppleClient(transport: transport, clock: clock, logger: logger)
            let service = AccountDeletionService(
                configuration: settings.server.lifecycle,
                store: store,
                apple: apple,
                sealer: settings.makeDataSealer(logger: logger),
                clock: clock,
                logger: logger
            )
            guard let deletion = try await service.deleteAccount(userID) else { return nil }
            let revocation = deletion.appleRevocation
            if json {
                var output = Output(
                    id: userID.description,
                    mode: deletion.mode.rawValue,
                    sessionsEnded: deletion.endedSessions.count,
                    appleRevocation: revocation.summary
                )
                if case .queued(let retryAt, let reason) = revocation {
                    output.retryAt = retryAt
                    output.reason = reason
                }
                return try UsersCommand.json(output)
            }
            let what = deletion.mode == .delete ? "deleted" : "anonymised"
            let outcome: String
            switch revocation {
            case .revoked:
                outcome = "Apple token revoked at Apple (confirmed: it no longer refreshes)"
            case .queued(let retryAt, let reason):
                outcome = "Apple token revocation queued for retry at \(retryAt.formatted(.iso8601)) (\(reason))"
            case .noAppleToken:
                outcome = "no Apple token was kept"
            }
            return "account \(userID) \(what), \(deletion.endedSessions.count) session(s) ended; \(outcome)"
        }
    }
}
