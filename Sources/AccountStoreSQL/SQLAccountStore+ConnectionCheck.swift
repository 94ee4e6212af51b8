public import AccountStore
public import Logging
import NIOCore
import NIOPosix
import PostgresKit
import PostgresNIO
import SQLiteNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension SQLAccountStore {
    /// What a connection check found, when the database can be used.
    public enum ConnectionCheck: Sendable, Equatable {
        /// The database answered a query; it holds siwa's schema at this version (0: none yet, `siwa migrate` creates
        /// it; above ``SQLAccountStore/schemaVersion``: a newer siwa upgraded it, and this one must not open it).
        case connected(schemaVersion: Int)
        /// The SQLite file does not exist yet, and its directory is writable: migrating (`siwa migrate`) creates it.
        case notCreatedYet
    }

    /// Checks that the SQLite file at `path` can be used, without creating it and without migrating it: opens one
    /// connection, reads the schema table, and closes it.
    ///
    /// - Parameters:
    ///   - path: The database file, absolute or relative to the current directory.
    ///   - logger: For the driver's debug logs.
    /// - Returns: ``ConnectionCheck/connected(schemaVersion:)``, or ``ConnectionCheck/notCreatedYet`` when the file
    ///   does not exist but its directory is writable.
    /// - Throws: ``StoreError/Code/unavailable`` naming the cause when the file or its directory is missing or not
    ///   writable or the file cannot be opened, ``StoreError/Code/corrupt`` when it is not a SQLite database.
    public static func checkConnection(
        sqlitePath path: String,
        logger: Logger
    ) async throws(StoreError) -> ConnectionCheck {
        guard !path.isEmpty else { throw StoreError(.invalidInput, "the SQLite path is empty") }
        let files = FileManager.default
        let absolute = path.hasPrefix("/") ? path : files.currentDirectoryPath + "/" + path
        let directory = absolute.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        let directoryShown = directory.isEmpty ? "/" : directory
        guard fileKind(directoryShown) == .directory else {
            throw StoreError(
                .unavailable,
                "the directory \(directoryShown) for \(path) does not exist: create it, or put the SQLite file elsewhere"
            )
        }
        // SQLite in WAL mode keeps `-wal` and `-shm` files beside the database: the directory must be writable too.
        guard access(directoryShown, W_OK | X_OK) == 0 else {
            throw StoreError(.unavailable, "the directory \(directoryShown) for \(path) is not writable by this user")
        }
        let kind = fileKind(absolute)
        guard kind != .missing else { return .notCreatedYet }
        guard kind != .directory else {
            throw StoreError(.unavailable, "\(path) is a directory, not a SQLite file")
        }
        guard access(absolute, R_OK | W_OK) == 0 else {
            throw StoreError(.unavailable, "\(path) exists but is not readable and writable by this user")
        }
        // `mode=rw`: fail rather than create the file should it vanish in between.
        let uri = "file:\(percentEncoded(absolute))?mode=rw"
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(storage: .file(path: uri), logger: checkLogger(logger))
        } catch {
            throw StoreError(.unavailable, "\(path) cannot be opened (\(sqliteReason(error)))")
        }
        do {
            // Reading the schema table reads the file's header: a file that is not SQLite fails here.
            let schemaTable = try await connection.query(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            )
            var version = 0
            if !schemaTable.isEmpty {
                let rows = try await connection.query("SELECT MAX(version) AS version FROM schema_version")
                version = rows.first?.column("version")?.integer ?? 0
            }
            try? await connection.close()
            return .connected(schemaVersion: version)
        } catch {
            try? await connection.close()
            if let error = error as? SQLiteError, error.reason == .notADatabase {
                throw StoreError(.corrupt, "\(path) is not a SQLite database")
            }
            throw StoreError(.unavailable, "\(path) cannot be read (\(sqliteReason(error)))")
        }
    }

    /// Opens the store in the SQLite file at `path` as it is, for checks that must change nothing (`siwa doctor`):
    /// never creates the file, never migrates.
    ///
    /// - Throws: ``StoreError/Code/unavailable`` when there is no file, it cannot be opened, or its schema is older
    ///   than ``schemaVersion`` (`siwa migrate` upgrades it); ``StoreError/Code/newerSchema`` when it is newer.
    public static func existingSQLite(path: String, logger: Logger) async throws(StoreError) -> SQLAccountStore {
        try await sqlite(
            path: path,
            connectionsPerEventLoop: 1,
            busyTimeout: .seconds(5),
            migrating: false,
            logger: logger
        )
    }

    /// Opens the store in the PostgreSQL database of `url` (and `schema`, as for
    /// ``postgres(url:schema:maximumConnections:logger:)``) as it is, with at most two connections, for checks that
    /// must change nothing (`siwa doctor`): never migrates.
    ///
    /// - Throws: as ``existingSQLite(path:logger:)``, and as ``postgres(url:schema:maximumConnections:logger:)`` for a
    ///   database that cannot be reached.
    /// - Warning: `url` holds the database password: read it from a secret, never log it.
    public static func existingPostgres(
        url: String,
        schema: String? = nil,
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        try await postgres(
            url: url,
            schema: schema,
            maximumConnections: 2,
            migrating: false,
            logger: logger
        )
    }

    /// Checks that the PostgreSQL database of `url` accepts a login, without migrating it: connects, runs
    /// `SELECT 1`, and closes the connection.
    ///
    /// - Parameters:
    ///   - url: `postgres://USER:PASSWORD@HOST:PORT/DATABASE`, as for ``postgres(url:schema:maximumConnections:logger:)``.
    ///   - timeout: How long to wait for the whole check.
    ///   - logger: For the driver's debug logs.
    /// - Returns: ``ConnectionCheck/connected(schemaVersion:)``, with the schema version found along the login's
    ///   search path.
    /// - Throws: ``StoreError/Code/invalidInput`` for a URL that cannot be used, ``StoreError/Code/unavailable``
    ///   naming the cause otherwise: nothing listening at the host and port, a host name that does not resolve, no
    ///   answer in time, a refused password or login, a missing database. The reason never repeats the password.
    /// - Warning: `url` holds the database password: read it from a secret, never log it.
    public static func checkConnection(
        postgresURL url: String,
        timeout: Duration = .seconds(5),
        logger: Logger
    ) async throws(StoreError) -> ConnectionCheck {
        let version = try await withCheckConnection(postgresURL: url, timeout: timeout, logger: logger) {
            connection,
            logger in
            let found = try await connection.query(
                "SELECT to_regclass('schema_version') IS NOT NULL AS found",
                logger: logger
            ).collect()
            guard try found.first?.decode(Bool.self) == true else { return 0 }
            let rows = try await connection.query("SELECT MAX(version) FROM schema_version", logger: logger).collect()
            return Int(try rows.first?.decode(Int64?.self) ?? 0)
        }
        return .connected(schemaVersion: version)
    }

    /// How many connections a PostgreSQL server lets this login open, and how many are open: what `siwa doctor`
    /// compares with the pool size (`SIWA_DATABASE_MAX_CONNECTIONS`) of each instance.
    public struct PostgresConnectionCapacity: Sendable, Equatable {
        /// The server's `max_connections`.
        public var maxConnections: Int
        /// The slots of `max_connections` this login cannot use: `superuser_reserved_connections`, and on PostgreSQL 16
        /// `reserved_connections` unless the login may use them (`pg_use_reserved_connections`); none for a superuser.
        public var reserved: Int
        /// The login's own `CONNECTION LIMIT`, when it has one and is no superuser (superusers are exempt).
        public var roleLimit: Int?
        /// The database's `CONNECTION LIMIT`, when it has one and the login is no superuser.
        public var databaseLimit: Int?
        /// Client connections open on the server now, the check's own included. Sessions of other logins that this
        /// one may not see (without `pg_read_all_stats`, for example through `pg_monitor`) are counted too, as
        /// ``hidden`` says; among them may be a few of the server's own workers, so this may count a little high.
        public var open: Int
        /// The login's own connections open now, the check's own included.
        public var openForRole: Int
        /// Connections to this database open now, the check's own included (hidden ones counted).
        public var openForDatabase: Int
        /// Sessions this login may not see, counted in ``open`` and ``openForDatabase``.
        public var hidden: Int

        /// The connections this login may open when no other client is connected.
        public var available: Int {
            max(0, min(maxConnections - reserved, roleLimit ?? .max, databaseLimit ?? .max))
        }

        /// The connections this login may still open now (the check's own, which closes, not counted).
        public var free: Int {
            let server = maxConnections - reserved - (open - 1)
            let role = roleLimit.map { $0 - (openForRole - 1) } ?? .max
            let database = databaseLimit.map { $0 - (openForDatabase - 1) } ?? .max
            return max(0, min(server, role, database))
        }

        public init(
            maxConnections: Int,
            reserved: Int,
            roleLimit: Int? = nil,
            databaseLimit: Int? = nil,
            open: Int,
            openForRole: Int = 1,
            openForDatabase: Int = 1,
            hidden: Int = 0
        ) {
            self.maxConnections = maxConnections
            self.reserved = reserved
            self.roleLimit = roleLimit
            self.databaseLimit = databaseLimit
            self.open = open
            self.openForRole = openForRole
            self.openForDatabase = openForDatabase
            self.hidden = hidden
        }
    }

    /// Reads the connection limits of the PostgreSQL server of `url` (see ``PostgresConnectionCapacity``): connects,
    /// reads the settings, the login's and the database's `CONNECTION LIMIT` and `pg_stat_activity`, and closes the
    /// connection. Never migrates, never writes.
    ///
    /// - Throws: as ``checkConnection(postgresURL:timeout:logger:)``; a query the server refuses or answers
    ///   unexpectedly is ``StoreError/Code/unavailable`` naming the server.
    /// - Warning: `url` holds the database password: read it from a secret, never log it.
    public static func connectionCapacity(
        postgresURL url: String,
        timeout: Duration = .seconds(5),
        logger: Logger
    ) async throws(StoreError) -> PostgresConnectionCapacity {
        try await withCheckConnection(postgresURL: url, timeout: timeout, logger: logger) { connection, logger in
            // The checks PostgreSQL makes at login (InitPostgres): a non-superuser is refused when fewer than the
            // reserved slots are free, or past its role's or its database's CONNECTION LIMIT (-1: none).
            // `current_setting(name, true)` is NULL where the setting does not exist (`reserved_connections` before
            // 16). A session of another login that this one may not see has a NULL `backend_type`; of those, the ones
            // with a database are counted as client connections.
            let rows = try await connection.query(
                """
                SELECT current_setting('max_connections')::int,
                    current_setting('superuser_reserved_connections')::int
                        + CASE WHEN EXISTS (
                            SELECT 1 FROM pg_roles
                            WHERE rolname = 'pg_use_reserved_connections' AND pg_has_role(oid, 'USAGE')
                        ) THEN 0 ELSE COALESCE(current_setting('reserved_connections', true), '0')::int END,
                    current_setting('is_superuser') = 'on',
                    (SELECT rolconnlimit FROM pg_roles WHERE rolname = session_user)::int,
                    (SELECT datconnlimit FROM pg_database WHERE datname = current_database())::int,
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int,
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type IS NULL AND datid IS NOT NULL)::int,
                    (SELECT count(*) FROM pg_stat_activity
                        WHERE backend_type = 'client backend' AND usename = session_user)::int,
                    (SELECT count(*) FROM pg_stat_activity
                        WHERE datname = current_database()
                            AND (backend_type = 'client backend' OR backend_type IS NULL))::int
                """,
                logger: logger
            ).collect()
            guard let row = rows.first else { throw UnexpectedAnswer() }
            let (maximum, reserved, isSuperuser, roleLimit, databaseLimit, clients, hidden, ofRole, ofDatabase) =
                try row.decode((Int, Int, Bool, Int, Int, Int, Int, Int, Int).self)
            return PostgresConnectionCapacity(
                maxConnections: maximum,
                reserved: isSuperuser ? 0 : reserved,
                roleLimit: isSuperuser || roleLimit < 0 ? nil : roleLimit,
                databaseLimit: isSuperuser || databaseLimit < 0 ? nil : databaseLimit,
                open: clients + hidden,
                openForRole: ofRole,
                openForDatabase: ofDatabase,
                hidden: hidden
            )
        }
    }

    /// A check's query answered with no row.
    private struct UnexpectedAnswer: Error {}

    /// A check's query failed once connected (told apart from failing to connect).
    private struct QueryFailure: Error {
        let underlying: any Error
    }

    /// Connects to `url` within `timeout`, runs `body` on the connection, and closes it; errors explained as
    /// ``checkConnection(postgresURL:timeout:logger:)`` says.
    static func withCheckConnection<Value: Sendable>(
        postgresURL url: String,
        timeout: Duration,
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Value
    ) async throws(StoreError) -> Value {
        var configuration: PostgresConnection.Configuration
        do {
            configuration = try SQLPostgresConfiguration(url: url).coreConfiguration
        } catch {
            throw StoreError(.invalidInput, "the URL is not a postgres:// URL siwa can use")
        }
        configuration.options.connectTimeout = TimeAmount(timeout)
        let target = Target(configuration)
        let connectionConfiguration = configuration
        let quiet = checkLogger(logger)
        let outcome: Result<Value, any Error> = await withTaskGroup(of: Result<Value, any Error>?.self) { group in
            group.addTask {
                do {
                    let connection = try await PostgresConnection.connect(
                        configuration: connectionConfiguration,
                        id: 1,
                        logger: quiet
                    )
                    let value: Value
                    do {
                        // PostgresNIO's queries do not end when their task is cancelled; closing the connection
                        // ends them, so the timeout bounds the query too.
                        value = try await withTaskCancellationHandler {
                            try await body(connection, quiet)
                        } onCancel: {
                            connection.close().whenComplete { _ in }
                        }
                    } catch {
                        try? await connection.close()
                        return .failure(QueryFailure(underlying: error))
                    }
                    try? await connection.close()
                    return .success(value)
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(ChannelError.connectTimeout(TimeAmount(timeout)))
        }
        switch outcome {
        case .success(let value): return value
        case .failure(let failure as QueryFailure): throw target.explainQuery(failure.underlying, timeout: timeout)
        case .failure(let error): throw target.explain(error, timeout: timeout)
        }
    }

    /// Where a PostgreSQL URL points, for messages: never the password.
    private struct Target: Sendable {
        var address: String
        var host: String
        var username: String
        var database: String

        init(_ configuration: PostgresConnection.Configuration) {
            let host = configuration.host ?? configuration.unixSocketPath ?? "?"
            self.host = host
            address = configuration.port.map { "\(host):\($0)" } ?? host
            username = configuration.username
            database = configuration.database ?? configuration.username
        }

        /// A query that failed once connected: the server refused it, the connection ended, or its answer could not
        /// be read.
        func explainQuery(_ error: any Error, timeout: Duration) -> StoreError {
            if let error = error as? PSQLError {
                guard error.code == .server else { return explain(error, timeout: timeout) }
                let state = error.serverInfo?[.sqlState] ?? "?"
                return StoreError(
                    .unavailable,
                    "PostgreSQL at \(address) refused the check's query (SQLSTATE \(state))"
                )
            }
            return StoreError(
                .unavailable,
                "PostgreSQL at \(address) answered the check's query with what siwa cannot read (\(type(of: error)))"
            )
        }

        func explain(_ error: any Error, timeout: Duration) -> StoreError {
            let unreachable = StoreError.Code.unavailable
            guard let error = error as? PSQLError else { return explainConnection(error, timeout: timeout) }
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? "?"
                switch state {
                case "28P01":
                    return StoreError(unreachable, "PostgreSQL at \(address) refused the password of user \(username)")
                case "28000":
                    return StoreError(
                        unreachable,
                        "PostgreSQL at \(address) refused the login of user \(username) (no such role, or no pg_hba.conf entry for this client)"
                    )
                case "3D000":
                    return StoreError(
                        unreachable,
                        "the database \(database) does not exist on PostgreSQL at \(address): create it (createdb \(database)) or fix the database name"
                    )
                case "53300":
                    return StoreError(unreachable, "PostgreSQL at \(address) has too many connections")
                case "57P03":
                    return StoreError(unreachable, "PostgreSQL at \(address) is starting up or shutting down")
                default:
                    return StoreError(
                        unreachable,
                        "PostgreSQL at \(address) refused the connection (SQLSTATE \(state))"
                    )
                }
            case .connectionError:
                return explainConnection(error.underlying ?? error, timeout: timeout)
            case .sslUnsupported:
                return StoreError(
                    unreachable,
                    "PostgreSQL at \(address) does not offer TLS but the URL requires it: enable ssl on the server or change sslmode"
                )
            case .failedToAddSSLHandler:
                return StoreError(unreachable, "the TLS connection to PostgreSQL at \(address) failed")
            case .authMechanismRequiresPassword:
                return StoreError(unreachable, "PostgreSQL at \(address) asks for a password and the URL has none")
            case .unsupportedAuthMechanism, .saslError:
                return StoreError(unreachable, "PostgreSQL at \(address) asks for a login method siwa cannot use")
            case .serverClosedConnection, .uncleanShutdown:
                return StoreError(unreachable, "PostgreSQL at \(address) closed the connection")
            default:
                return StoreError(unreachable, "cannot connect to PostgreSQL at \(address) (\(error.code))")
            }
        }

        private func explainConnection(_ error: any Error, timeout: Duration) -> StoreError {
            if let error = error as? NIOConnectionError {
                if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                    return StoreError(.unavailable, "the host name \(host) does not resolve")
                }
                if let first = error.connectionErrors.first?.error { return explainConnection(first, timeout: timeout) }
            }
            if let error = error as? IOError {
                switch error.errnoCode {
                case ECONNREFUSED:
                    return StoreError(
                        .unavailable,
                        "nothing accepts connections at \(address) (connection refused): is PostgreSQL running, on this host and port?"
                    )
                case EHOSTUNREACH, ENETUNREACH:
                    return StoreError(.unavailable, "\(address) cannot be reached from here (no route to host)")
                case ETIMEDOUT:
                    return StoreError(.unavailable, "no answer from \(address) (timed out)")
                default:
                    return StoreError(.unavailable, "cannot connect to \(address) (errno \(error.errnoCode))")
                }
            }
            if let error = error as? ChannelError, case .connectTimeout = error {
                return StoreError(
                    .unavailable,
                    "no answer from PostgreSQL at \(address) within \(timeout): a firewall, or the wrong host or port?"
                )
            }
            return StoreError(.unavailable, "cannot connect to PostgreSQL at \(address) (\(type(of: error)))")
        }
    }

    private enum FileKind {
        case missing
        case directory
        case other
    }

    /// What is at `path`, following symbolic links.
    private static func fileKind(_ path: String) -> FileKind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        return info.st_mode & S_IFMT == S_IFDIR ? .directory : .other
    }

    /// `logger` for the drivers, at debug or above: at trace, PostgresNIO logs every message from the server.
    private static func checkLogger(_ logger: Logger) -> Logger {
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .debug)
        return quiet
    }

    /// The driver's reason code of a SQLite error, never its message (which can quote the path or values).
    private static func sqliteReason(_ error: any Error) -> String {
        (error as? SQLiteError).map { "SQLite \($0.reason)" } ?? "\(type(of: error))"
    }

    /// `path` for a SQLite `file:` URI: everything but unreserved characters and `/` percent-encoded.
    private static func percentEncoded(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%\(hex[Int(byte >> 4)])\(hex[Int(byte & 0xF)])"
            }
        }
        return out
    }
}
