import AccountStore
import Logging
import SQLKit

/// siwa's tables, as numbered migrations that run in order when a store opens.
///
/// One schema for SQLite and PostgreSQL alike: ids and hashes are TEXT (UUIDs lower-case, hashes hex, sealed blobs
/// base64), times BIGINT milliseconds since 1970, booleans INTEGER 0 or 1. `schema_version` holds one row per
/// applied migration. A migration is never edited once released; changes are new migrations at the end.
enum SQLSchema {
    /// One numbered step of the schema: what it changes, in which release it came, and its statements (what only
    /// Swift can do runs after them, in ``finish(_:_:flavor:)``). `docs/schema.md` is generated from these.
    struct Migration: Sendable {
        /// Its number: the first is 1, each the one before plus one.
        let version: Int
        /// The siwa release that first applied it.
        let release: String
        /// What it changes, in one sentence.
        let summary: String
        let statements: [SQLQueryString]
    }

    /// The migrations; the first one is version 1.
    static let migrations: [Migration] = [
        Migration(
            version: 1,
            release: "0.1.0",
            summary:
                "Accounts, Apple refresh tokens (sealed), sessions, refresh tokens, server nonces and signing keys.",
            statements: [
                """
                CREATE TABLE users (
                    id TEXT NOT NULL PRIMARY KEY,
                    apple_user_id TEXT NOT NULL UNIQUE,
                    client_id TEXT NOT NULL,
                    email TEXT,
                    email_verified INTEGER NOT NULL,
                    is_private_email INTEGER NOT NULL,
                    email_forwarding INTEGER NOT NULL,
                    given_name TEXT,
                    family_name TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX users_by_creation ON users (created_at, id)",
                """
                CREATE TABLE apple_tokens (
                    user_id TEXT NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    sealed_refresh_token TEXT NOT NULL,
                    stored_at BIGINT NOT NULL,
                    last_validated_at BIGINT
                )
                """,
                """
                CREATE TABLE sessions (
                    id TEXT NOT NULL PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                )
                """,
                "CREATE INDEX sessions_by_user ON sessions (user_id)",
                "CREATE INDEX sessions_by_revocation ON sessions (revoked_at)",
                """
                CREATE TABLE refresh_tokens (
                    hash TEXT NOT NULL PRIMARY KEY,
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    issued_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    used_at BIGINT
                )
                """,
                "CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id)",
                "CREATE INDEX refresh_tokens_by_user ON refresh_tokens (user_id)",
                """
                CREATE TABLE server_nonces (
                    hash TEXT NOT NULL PRIMARY KEY,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX server_nonces_by_expiry ON server_nonces (expires_at)",
                """
                CREATE TABLE signing_keys (
                    kid TEXT NOT NULL PRIMARY KEY,
                    sealed_private_key TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    retired_at BIGINT
                )
                """,
            ]
        ),
        Migration(
            version: 2,
            release: "0.1.0",
            summary:
                "Account lifecycle and the web flow: consent revocations, deletions, queued Apple revocations, Apple's notifications, web flow states.",
            statements: [
                "ALTER TABLE users ADD COLUMN apple_consent_revoked_at BIGINT",
                "CREATE INDEX users_by_update ON users (updated_at)",
                "CREATE INDEX apple_tokens_by_validation ON apple_tokens (last_validated_at)",
                "CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at)",
                """
                CREATE TABLE account_deletions (
                    user_id TEXT NOT NULL,
                    deleted_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, deleted_at)
                )
                """,
                "CREATE INDEX account_deletions_by_time ON account_deletions (deleted_at)",
                """
                CREATE TABLE apple_revocations (
                    id TEXT NOT NULL PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    sealed_refresh_token TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    attempts BIGINT NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    last_error TEXT
                )
                """,
                "CREATE INDEX apple_revocations_by_due ON apple_revocations (next_attempt_at)",
                """
                CREATE TABLE apple_notifications (
                    event_key TEXT NOT NULL PRIMARY KEY,
                    type TEXT NOT NULL,
                    apple_user_id TEXT NOT NULL,
                    user_id TEXT,
                    event_time BIGINT NOT NULL,
                    received_at BIGINT NOT NULL,
                    outcome TEXT NOT NULL
                )
                """,
                "CREATE INDEX apple_notifications_by_time ON apple_notifications (received_at)",
                """
                CREATE TABLE web_flow_states (
                    state_hash TEXT NOT NULL PRIMARY KEY,
                    nonce TEXT NOT NULL,
                    return_url TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    used_at BIGINT
                )
                """,
                "CREATE INDEX web_flow_states_by_expiry ON web_flow_states (expires_at)",
            ]
        ),
        Migration(
            version: 3,
            release: "0.2.0",
            summary: "Team transfer (TN3159): the accounts' transfer subjects.",
            statements: [
                """
                CREATE TABLE user_transfers (
                    user_id TEXT NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                    transfer_sub TEXT NOT NULL UNIQUE,
                    target_team TEXT NOT NULL,
                    exported_at BIGINT NOT NULL,
                    transferred_at BIGINT
                )
                """,
                "CREATE INDEX user_transfers_by_state ON user_transfers (transferred_at, user_id)",
            ]
        ),
        Migration(
            version: 4,
            release: "0.3.0",
            summary: "Operators find accounts by email and disable them.",
            statements: [
                "ALTER TABLE users ADD COLUMN disabled_at BIGINT",
                "CREATE INDEX users_by_email ON users (lower(email))",
            ]
        ),
        // The operator console. Accounts get search keys compared bytewise (lower-cased as `SearchKey` does: the
        // statements fold ASCII letters, `finish` the others) and their last sign-in (for existing accounts, their
        // newest session's); sessions get how and from where they started; refresh tokens when a non-rotating
        // contract last checked them (with `used_at`, the session's last use); the audit log with the kept counts of
        // settled days (`audit_daily_counts`, and `audit_counted_days` for which days they hold); admin grants.
        Migration(
            version: 5,
            release: "0.4.0",
            summary:
                "The operator console: search keys, last sign-in, how sessions started, the audit log and its daily counts, admin grants.",
            statements: [
                "ALTER TABLE users ADD COLUMN email_key \(SQLBytewiseText())",
                "ALTER TABLE users ADD COLUMN given_name_key \(SQLBytewiseText())",
                "ALTER TABLE users ADD COLUMN family_name_key \(SQLBytewiseText())",
                "ALTER TABLE users ADD COLUMN last_sign_in_at BIGINT",
                """
                UPDATE users SET
                    email_key = lower(email), given_name_key = lower(given_name), family_name_key = lower(family_name),
                    last_sign_in_at = (SELECT MAX(created_at) FROM sessions WHERE sessions.user_id = users.id)
                """,
                "DROP INDEX users_by_email",
                "CREATE INDEX users_by_email_key ON users (email_key, id)",
                "CREATE INDEX users_by_given_name_key ON users (given_name_key, id)",
                "CREATE INDEX users_by_family_name_key ON users (family_name_key, id)",
                "ALTER TABLE sessions ADD COLUMN channel TEXT",
                "ALTER TABLE sessions ADD COLUMN user_agent TEXT",
                "ALTER TABLE sessions ADD COLUMN client_address TEXT",
                "DROP INDEX sessions_by_user",
                "CREATE INDEX sessions_by_user ON sessions (user_id, created_at)",
                "ALTER TABLE refresh_tokens ADD COLUMN last_checked_at BIGINT",
                """
                CREATE TABLE audit_events (
                    id \(SQLBytewiseText()) NOT NULL PRIMARY KEY,
                    occurred_at BIGINT NOT NULL,
                    type \(SQLBytewiseText()) NOT NULL,
                    user_id TEXT,
                    actor TEXT NOT NULL,
                    actor_subject TEXT,
                    channel \(SQLBytewiseText()),
                    client_id TEXT,
                    reason \(SQLBytewiseText()),
                    session_id TEXT,
                    details TEXT
                )
                """,
                "CREATE INDEX audit_events_by_time ON audit_events (occurred_at, id)",
                "CREATE INDEX audit_events_by_user ON audit_events (user_id, occurred_at, id)",
                // With channel and reason, so that the day's counts read the index alone.
                "CREATE INDEX audit_events_by_type ON audit_events (type, occurred_at, id, channel, reason)",
                """
                CREATE TABLE audit_daily_counts (
                    day BIGINT NOT NULL,
                    type \(SQLBytewiseText()) NOT NULL,
                    channel \(SQLBytewiseText()) NOT NULL,
                    reason \(SQLBytewiseText()) NOT NULL,
                    count BIGINT NOT NULL,
                    PRIMARY KEY (day, type, channel, reason)
                )
                """,
                "CREATE TABLE audit_counted_days (day BIGINT NOT NULL PRIMARY KEY)",
                // The few anonymised accounts, which the account totals leave out.
                "CREATE INDEX users_anonymised ON users (created_at) WHERE apple_user_id LIKE 'anonymised:%'",
                """
                CREATE TABLE admin_grants (
                    subject TEXT NOT NULL PRIMARY KEY,
                    granted_by TEXT NOT NULL,
                    granted_by_subject TEXT,
                    granted_at BIGINT NOT NULL
                )
                """,
            ]
        ),
        // The OpenID provider's authorization codes (by hash), single use, with the session their redemption
        // started, so that a replay ends it.
        Migration(
            version: 6,
            release: "0.4.0",
            summary: "The OpenID provider's authorization codes, single use.",
            statements: [
                """
                CREATE TABLE authorization_codes (
                    code_hash TEXT NOT NULL PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    code_challenge TEXT,
                    nonce TEXT,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    browser_session_id TEXT NOT NULL,
                    auth_time BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    redeemed_at BIGINT,
                    issued_session_id TEXT
                )
                """,
                "CREATE INDEX authorization_codes_by_expiry ON authorization_codes (expires_at)",
                "CREATE INDEX authorization_codes_by_user ON authorization_codes (user_id)",
            ]
        ),
        // A refresh token reaches its account through its session, whose foreign key already deletes the tokens
        // with the account: the index on `refresh_tokens.user_id` and that column's own foreign key go. The index put
        // a page of its own (keyed by account, so rarely one another write had dirtied) into every sign-in's and
        // every refresh's commit, and the foreign key needs it (deleting an account would read every token). SQLite
        // has no statement to drop an unnamed foreign key, so `finish` edits the table's definition there.
        Migration(
            version: 7,
            release: "0.4.0",
            summary: "A refresh token reaches its account through its session: one index and one foreign key dropped.",
            statements: ["DROP INDEX refresh_tokens_by_user"]
        ),
        // What a user allowed each public relying party on the consent page, so that it is asked once per client
        // (and again only for more scopes). Keyed by account first: deleting one reads its own rows only.
        Migration(
            version: 8,
            release: "0.4.0",
            summary: "The OpenID consent page's answers, per account and client (client_consents).",
            statements: [
                """
                CREATE TABLE client_consents (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    granted_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, client_id)
                )
                """
            ]
        ),
        // On PostgreSQL, triggers that announce endings and changes to every instance as they commit
        // (``announcementTriggers``); SQLite has one process, which knows its own changes.
        Migration(
            version: 9,
            release: "0.4.0",
            summary: "PostgreSQL only: triggers that announce endings and changes to every instance.",
            statements: []
        ),
        // On PostgreSQL, the counts every instance adds to for the limits of the whole deployment
        // (``sharedCountsTable``); SQLite has one process, which counts in memory.
        Migration(
            version: 10,
            release: "0.4.0",
            summary: "PostgreSQL only: the counts every instance adds to for the deployment's limits.",
            statements: []
        ),
        // The admin API's service tokens, found by the SHA-256 of their secret; a name is unique among the tokens
        // not revoked, so that the audit log's name for a token means one credential at a time.
        Migration(
            version: 11,
            release: "0.4.0",
            summary: "The admin API's service tokens (admin_tokens).",
            statements: [
                """
                CREATE TABLE admin_tokens (
                    token_hash TEXT NOT NULL PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    created_by TEXT NOT NULL,
                    created_by_subject TEXT,
                    expires_at BIGINT NOT NULL,
                    last_used_at BIGINT,
                    revoked_at BIGINT
                )
                """,
                "CREATE UNIQUE INDEX admin_tokens_unrevoked_name ON admin_tokens (name) WHERE revoked_at IS NULL",
            ]
        ),
        // A consent names the redirect URI the page showed: any app can claim a public client's custom scheme, so
        // one given for a client's first redirect URI must not let its second through unasked. The consents of
        // version 8 name none, so they go: each user is asked once more.
        Migration(
            version: 12,
            release: "0.4.0",
            summary:
                "The OpenID consents per account, client and redirect URI (client_redirect_consents; earlier "
                + "consents are dropped, and users are asked once more).",
            statements: [
                """
                CREATE TABLE client_redirect_consents (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    client_id TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    granted_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, client_id, redirect_uri)
                )
                """,
                "DROP TABLE client_consents",
            ]
        ),
        // The outbox: each lifecycle change writes its event in its own transaction. No foreign key on the account:
        // an account's events outlive it (its deletion is one of them).
        Migration(
            version: 13,
            release: "0.4.0",
            summary:
                "Lifecycle events, written with the change they record (lifecycle_events, with the sequence row "
                + "lifecycle_event_sequence that orders them by commit).",
            statements: [
                """
                CREATE TABLE lifecycle_events (
                    sequence BIGINT NOT NULL PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    occurred_at BIGINT NOT NULL,
                    data TEXT NOT NULL
                )
                """,
                "CREATE INDEX lifecycle_events_by_user ON lifecycle_events (user_id, sequence)",
                "CREATE INDEX lifecycle_events_by_time ON lifecycle_events (occurred_at)",
                """
                CREATE TABLE lifecycle_event_sequence (
                    id INTEGER NOT NULL PRIMARY KEY,
                    last BIGINT NOT NULL
                )
                """,
                "INSERT INTO lifecycle_event_sequence (id, last) VALUES (1, 0)",
            ]
        ),
        // Deliveries name their event by sequence and read it when sent, so that a deleted account's blanked values
        // reach pending deliveries too; the endpoints themselves are configuration, only their progress is here.
        Migration(
            version: 14,
            release: "0.4.0",
            summary:
                "Webhook deliveries of the lifecycle events (webhook_endpoints, each endpoint's cursor and failing "
                + "state; webhook_deliveries; webhook_attempts).",
            statements: [
                """
                CREATE TABLE webhook_endpoints (
                    name TEXT NOT NULL PRIMARY KEY,
                    after_sequence BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    failing_since BIGINT,
                    disabled_at BIGINT
                )
                """,
                """
                CREATE TABLE webhook_deliveries (
                    id TEXT NOT NULL PRIMARY KEY,
                    endpoint TEXT NOT NULL,
                    event_sequence BIGINT NOT NULL,
                    user_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    created_at BIGINT NOT NULL,
                    next_attempt_at BIGINT,
                    claimed_until BIGINT,
                    last_attempt_at BIGINT,
                    last_status INTEGER,
                    last_error TEXT,
                    delivered_at BIGINT,
                    UNIQUE (endpoint, event_sequence)
                )
                """,
                "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, state, next_attempt_at)",
                """
                CREATE INDEX webhook_deliveries_by_user ON webhook_deliveries (endpoint, user_id, state, event_sequence)
                """,
                "CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_sequence)",
                """
                CREATE TABLE webhook_attempts (
                    delivery_id TEXT NOT NULL,
                    number INTEGER NOT NULL,
                    attempted_at BIGINT NOT NULL,
                    status INTEGER,
                    error TEXT,
                    duration_ms BIGINT NOT NULL,
                    PRIMARY KEY (delivery_id, number)
                )
                """,
            ]
        ),
    ]

    /// Every table the migrations create (and the version table), PostgreSQL's `shared_counts` included; a test
    /// compares the list with the tables of a migrated database, so that a new table cannot be missing here.
    static let tableNames = [
        "schema_version", "users", "apple_tokens", "sessions", "refresh_tokens", "server_nonces", "signing_keys",
        "account_deletions", "apple_revocations", "apple_notifications", "web_flow_states", "user_transfers",
        "audit_events", "audit_daily_counts", "audit_counted_days", "admin_grants", "authorization_codes",
        "client_consents", "shared_counts", "admin_tokens", "client_redirect_consents", "lifecycle_events",
        "lifecycle_event_sequence", "webhook_endpoints", "webhook_deliveries", "webhook_attempts",
    ]

    /// The functions the migrations create (PostgreSQL's announcement trigger's).
    static let functionNames = ["siwa_announce"]

    /// Statements that drop every table and function of ``tableNames`` and ``functionNames`` (tables with what
    /// depends on them), for a restore that must leave nothing of a newer schema behind: a table a later migration
    /// made would keep a foreign key on `users`, and a function would stop that migration from running again.
    static var dropStatements: [String] {
        tableNames.map { "DROP TABLE IF EXISTS \($0) CASCADE;" }
            + functionNames.map { "DROP FUNCTION IF EXISTS \($0)() CASCADE;" }
    }

    /// The schema version this build of siwa writes.
    static var currentVersion: Int { migrations.count }

    /// Tests only: the version to migrate to instead of ``currentVersion``, to make a database as an older siwa left
    /// it (and then open it with this one).
    @TaskLocal static var migrationTarget: Int?

    /// What a migration does in Swift after its statements, in the same transaction: version 5 fills the search keys
    /// that statements cannot, version 7 drops a foreign key (``dropRefreshTokensAccountKey(_:flavor:)``), versions 9
    /// and 10 create what only PostgreSQL has.
    static func finish(_ version: Int, _ database: any SQLDatabase, flavor: SQLFlavor) async throws {
        switch version {
        case 5: try await fillSearchKeys(database)
        case 7: try await dropRefreshTokensAccountKey(database, flavor: flavor)
        case 9 where flavor == .postgres:
            for statement in announcementTriggers { try await database.raw(SQLQueryString(statement)).run() }
        case 10 where flavor == .postgres:
            try await database.raw(SQLQueryString(sharedCountsTable)).run()
        default: break
        }
    }

    /// Version 10 on PostgreSQL: the shared limits' counts (``PostgresSharedCounters``), one row per key and window.
    /// Unlogged: a count is worth less than the write-ahead log's cost on every batch, and a crash of the database
    /// loses only counts, which start again from zero (as each process's did when it restarted).
    static let sharedCountsTable = """
        CREATE UNLOGGED TABLE shared_counts (
            key TEXT NOT NULL,
            window_start BIGINT NOT NULL,
            count BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            PRIMARY KEY (key, window_start)
        )
        """

    /// The channel of the announcements (``PostgresAnnouncementListener``).
    static let announcementChannel = "siwa_changes"

    /// Version 9 on PostgreSQL: `NOTIFY` on ``announcementChannel`` for each session ended, account deleted or changed
    /// and signing-key change, with the table's schema first (instances of two deployments in one database hear each
    /// other's channel and keep only their own). A notification is sent when its transaction commits, and only then.
    /// The session trigger names `revoked_at` and fires only when it is set: a sign-in's or a rotation's writes to
    /// `sessions` never notify.
    static let announcementTriggers = [
        """
        CREATE FUNCTION siwa_announce() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'sessions' THEN
                PERFORM pg_notify('\(announcementChannel)',
                    TG_TABLE_SCHEMA || ' session ' || NEW.id || ' ' || NEW.revoked_at);
            ELSIF TG_TABLE_NAME = 'account_deletions' THEN
                PERFORM pg_notify('\(announcementChannel)',
                    TG_TABLE_SCHEMA || ' deletion ' || NEW.user_id || ' ' || NEW.deleted_at);
            ELSIF TG_TABLE_NAME = 'users' THEN
                PERFORM pg_notify('\(announcementChannel)', TG_TABLE_SCHEMA || ' account ' || NEW.id);
            ELSE
                PERFORM pg_notify('\(announcementChannel)', TG_TABLE_SCHEMA || ' keys');
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER sessions_announce_end AFTER UPDATE OF revoked_at ON sessions FOR EACH ROW
        WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION siwa_announce()
        """,
        """
        CREATE TRIGGER account_deletions_announce AFTER INSERT ON account_deletions FOR EACH ROW
        EXECUTE FUNCTION siwa_announce()
        """,
        """
        CREATE TRIGGER users_announce_change AFTER UPDATE ON users FOR EACH ROW
        WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION siwa_announce()
        """,
        """
        CREATE TRIGGER signing_keys_announce AFTER INSERT OR UPDATE OR DELETE ON signing_keys FOR EACH STATEMENT
        EXECUTE FUNCTION siwa_announce()
        """,
    ]

    /// Version 5: the search keys of emails and names that are not all ASCII, which `lower` left unfolded
    /// (``SearchKey`` folds every letter).
    private static func fillSearchKeys(_ database: any SQLDatabase) async throws {
        let rows = try await database.raw(
            """
            SELECT id, email, given_name, family_name FROM users
            WHERE length(email) <> octet_length(email) OR length(given_name) <> octet_length(given_name)
                OR length(family_name) <> octet_length(family_name)
            """
        ).all()
        for row in rows {
            let id = try row.decode(column: "id", as: String.self)
            let email = try row.decode(column: "email", as: String?.self).map(SearchKey.of)
            let givenName = try row.decode(column: "given_name", as: String?.self).map(SearchKey.of)
            let familyName = try row.decode(column: "family_name", as: String?.self).map(SearchKey.of)
            try await database.raw(
                """
                UPDATE users SET
                    email_key = \(bind: email), given_name_key = \(bind: givenName), family_name_key = \(bind: familyName)
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    /// Version 7: `refresh_tokens.user_id` keeps its values (a token's account, as its session's) without a foreign
    /// key. PostgreSQL drops the constraint (named as PostgreSQL names an unnamed one; version 1 named none).
    ///
    /// SQLite has no statement for an unnamed one (its `DROP CONSTRAINT` takes a name). Its documentation gives two
    /// ways: copy the table into a new one, or, for a change that leaves the stored rows and indexes as they are
    /// (dropping a foreign key is one), edit the table's definition in `sqlite_schema` and step the schema version so
    /// that every connection reads it again. The copy measured 16.5 s, 366 MB of memory and some 300 MB of log per
    /// million tokens (the old table's pages, journalled in memory as the writer keeps its journals); the migration
    /// with the edit took 0.6 s, so siwa edits. The definition must hold the clause version 1 wrote, once; the edit is
    /// checked before the migration commits.
    private static func dropRefreshTokensAccountKey(_ database: any SQLDatabase, flavor: SQLFlavor) async throws {
        guard flavor == .sqlite else {
            try await database.raw("ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_user_id_fkey").run()
            return
        }
        let key = "user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE"
        let definition = try await database.raw(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'refresh_tokens'"
        ).first()?.decode(column: "sql", as: String.self)
        guard let definition, definition.ranges(of: key).count == 1 else {
            throw StoreError(
                .corrupt,
                """
                the refresh_tokens table is not defined as siwa's migrations define it (its user_id column with \
                "REFERENCES users (id) ON DELETE CASCADE"): was the file edited by hand? Restore a backup
                """
            )
        }
        let version = try await database.raw("PRAGMA schema_version").first()?.decode(
            column: "schema_version",
            as: Int.self
        )
        guard let version else { throw StoreError(.corrupt, "SQLite did not report its schema version") }
        try await database.raw("PRAGMA writable_schema = ON").run()
        do {
            // A connection in SQLite's defensive mode ignores the setting (and would then refuse the edit with a
            // message about sqlite_master): say what is in the way.
            let writable = try await database.raw("PRAGMA writable_schema").first()?.decode(
                column: "writable_schema",
                as: Int.self
            )
            guard writable == 1 else {
                throw StoreError(
                    .unavailable,
                    "SQLite refuses to edit its schema on this connection (defensive mode), which migration 7 needs"
                )
            }
            try await database.raw(
                """
                UPDATE sqlite_schema SET sql = \(bind: definition.replacing(key, with: "user_id TEXT NOT NULL"))
                WHERE type = 'table' AND name = 'refresh_tokens'
                """
            ).run()
            try await database.raw("PRAGMA schema_version = \(unsafeRaw: String(version + 1))").run()
        } catch {
            try? await database.raw("PRAGMA writable_schema = OFF").run()
            throw error
        }
        // Off, as the documentation's procedure ends (not RESET, which would also clear the connection's note of an
        // uncommitted schema change, so that a rollback would not read the schema again). The new schema version
        // already makes the next statement read it again.
        try await database.raw("PRAGMA writable_schema = OFF").run()
        let references = try await database.raw(
            #"SELECT "table" FROM pragma_foreign_key_list('refresh_tokens')"#
        ).all().map { try $0.decode(column: "table", as: String.self) }
        guard references == ["sessions"] else {
            throw StoreError(.corrupt, "the refresh_tokens table still has a foreign key other than its session's")
        }
    }

    /// Brings the database to ``currentVersion``: applies, in one transaction, every migration it lacks. Safe to run
    /// any number of times, also from several processes at once (they take turns).
    ///
    /// - Parameters:
    ///   - connections: The database.
    ///   - schema: A PostgreSQL schema to create first (the connections' search path), or `nil`.
    ///   - logger: Logs each applied migration at info.
    /// - Returns: The version before migrating (0 for a new database).
    /// - Throws: ``StoreError/Code/newerSchema`` when a newer siwa migrated the database; driver errors otherwise.
    @discardableResult
    static func migrate(_ connections: any SQLConnections, schema: String?, logger: Logger) async throws -> Int {
        let target = migrationTarget ?? currentVersion
        return try await connections.withTransaction(lock: .migrations) { database in
            if let schema {
                try await database.raw("CREATE SCHEMA IF NOT EXISTS \(ident: schema)").run()
            }
            try await database.raw("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL PRIMARY KEY)")
                .run()
            let found = try await appliedVersion(database)
            guard found <= currentVersion, target <= currentVersion else {
                throw newerSchema(found)
            }
            for migration in migrations where migration.version > found && migration.version <= target {
                for statement in migration.statements { try await database.raw(statement).run() }
                try await finish(migration.version, database, flavor: connections.flavor)
                try await database.raw(
                    "INSERT INTO schema_version (version) VALUES (\(bind: Int64(migration.version)))"
                )
                .run()
                logger.info("applied store migration", metadata: ["version": "\(migration.version)"])
            }
            return found
        }
    }

    /// Why this build does not open a database at schema version `found`, which a newer release wrote.
    static func newerSchema(_ found: Int) -> StoreError {
        StoreError(
            .newerSchema,
            "the database has schema version \(found), from a newer siwa (this one knows versions 1 to \(currentVersion)): "
                + "run the siwa that upgraded it, or roll back by restoring the backup taken before that upgrade"
        )
    }

    /// The highest applied migration, or 0 when the database has no schema table (yet), without creating one.
    static func appliedVersion(ifCreatedIn database: any SQLDatabase, flavor: SQLFlavor) async throws -> Int {
        let query: SQLQueryString =
            switch flavor {
            case .sqlite: "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            // `to_regclass` looks the table up along the search path, as the store's statements do.
            case .postgres: "SELECT 1 AS found WHERE to_regclass('schema_version') IS NOT NULL"
            }
        guard try await database.raw(query).first() != nil else { return 0 }
        return try await appliedVersion(database)
    }

    /// The highest applied migration (0 for none).
    static func appliedVersion(_ database: any SQLDatabase) async throws -> Int {
        let row = try await database.raw("SELECT MAX(version) AS version FROM schema_version").first()
        return Int(try row?.decode(column: "version", as: Int64?.self) ?? 0)
    }
}
