public import AccountStore
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresKit
import PostgresNIO
import SQLKit
import SQLiteKit
import SQLiteNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
private typealias Glibc = Darwin
#endif

/// An ``AccountStore`` in a SQL database through SQLKit: SQLite (a file, the default) or PostgreSQL (for several
/// `siwa serve` processes on one database).
///
/// Open one with ``sqlite(path:connectionsPerEventLoop:busyTimeout:logger:)`` or
/// ``postgres(url:schema:maximumConnections:logger:)``: both bring the schema up to date before they return, and
/// both pool connections (opened on demand and reused, up to a limit). Call
/// ``shutdown()`` when done: it closes every connection.
///
/// Every method runs as one statement or one transaction. Times are kept as milliseconds, refresh-token and nonce
/// hashes as hex, sealed blobs as base64. Driver errors become ``StoreError``s (a unique violation is
/// ``StoreError/Code/duplicate``, a lost connection ``StoreError/Code/unavailable``); nothing the store logs contains a
/// hash, token, key or the database password.
public final class SQLAccountStore: AccountStore {
    let connections: any SQLConnections
    let logger: Logger
    /// `logger` at debug or above, for the drivers (see ``driverLogger(_:)``).
    let driverLogger: Logger

    /// The schema version this build of siwa creates and understands.
    public static var schemaVersion: Int { SQLSchema.currentVersion }

    /// One schema version, as the migrations that make it describe it.
    public struct SchemaMigration: Sendable, Equatable {
        /// Its number; the first is 1.
        public let version: Int
        /// The siwa release that first applied it.
        public let release: String
        /// What it changes, in one sentence.
        public let summary: String
    }

    /// Why this build does not open a database at schema version `found` (above ``schemaVersion``), and what to do:
    /// the reason of the ``StoreError/Code/newerSchema`` error that opening it throws.
    public static func newerSchemaReason(_ found: Int) -> String { SQLSchema.newerSchema(found).reason }

    /// Every schema version this build applies, oldest first: what `siwa migrate --dry-run` and `docs/schema.md` show.
    public static var schemaMigrations: [SchemaMigration] {
        SQLSchema.migrations.map { SchemaMigration(version: $0.version, release: $0.release, summary: $0.summary) }
    }

    /// The schema version the database had when this store opened it: 0 for a database this store created,
    /// ``schemaVersion`` for one already current, anything between for one it upgraded.
    public let openedAtSchemaVersion: Int

    /// Hears other instances' changes (PostgreSQL with siwa's pool); `nil`: the store announces nothing.
    let announcementListener: PostgresAnnouncementListener?

    init(
        connections: any SQLConnections,
        logger: Logger,
        openedAtSchemaVersion: Int = SQLSchema.currentVersion,
        announcementListener: PostgresAnnouncementListener? = nil
    ) {
        self.connections = connections
        self.announcementListener = announcementListener
        self.openedAtSchemaVersion = openedAtSchemaVersion
        self.logger = logger
        self.driverLogger = Self.driverLogger(logger)
    }

    /// Opens (and creates, if needed) a store in the SQLite file at `path`, in WAL mode.
    ///
    /// - Parameters:
    ///   - path: The database file; its directory must exist. Other processes may open the same file.
    ///   - connectionsPerEventLoop: The pool's limit is this many connections per event loop of NIO's shared group.
    ///   - busyTimeout: How long a statement waits for another writer before failing with
    ///     ``StoreError/Code/unavailable`` (at most an hour).
    ///   - logger: For the store's debug logs and the migrations it applies.
    /// - Returns: A store at the current ``schemaVersion``.
    /// - Throws: ``StoreError/Code/unavailable`` when the file cannot be opened, ``StoreError/Code/corrupt`` when it
    ///   is not a siwa database this version understands.
    public static func sqlite(
        path: String,
        connectionsPerEventLoop: Int = 2,
        busyTimeout: Duration = .seconds(5),
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        try await sqlite(
            path: path,
            connectionsPerEventLoop: connectionsPerEventLoop,
            busyTimeout: busyTimeout,
            migrating: true,
            logger: logger
        )
    }

    /// ``sqlite(path:connectionsPerEventLoop:busyTimeout:logger:)``, or, unless `migrating`, the file as it is: never
    /// created, never migrated (``existingSQLite(path:logger:)``).
    static func sqlite(
        path: String,
        connectionsPerEventLoop: Int,
        busyTimeout: Duration,
        migrating: Bool,
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        guard !path.isEmpty, connectionsPerEventLoop > 0 else {
            throw StoreError(.invalidInput, "open the SQLite store: a path and at least one connection are needed")
        }
        if migrating {
            do {
                try createPrivately(path)
            } catch {
                throw StoreError(.unavailable, "open the SQLite store: the file cannot be created (\(error))")
            }
        } else if access(path, F_OK) != 0 {
            throw StoreError(.unavailable, "open the SQLite store: there is no database at \(path)")
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let loops = Array(group.makeIterator()).count
        let threadPool = NIOThreadPool(numberOfThreads: loops * connectionsPerEventLoop + 1)
        threadPool.start()
        let (seconds, attoseconds) = busyTimeout.components
        let milliseconds = min(max(seconds, 0), 3_600) * 1_000 + max(attoseconds, 0) / 1_000_000_000_000_000
        let source = SQLiteFileConnectionSource(
            path: path,
            threadPool: threadPool,
            busyTimeoutMilliseconds: Int(clamping: milliseconds)
        )
        let readers = SQLConnectionPool(
            open: { logger, eventLoop in source.makeConnection(logger: logger, on: eventLoop) },
            flavor: .sqlite,
            limit: loops * connectionsPerEventLoop,
            logger: driverLogger(logger),
            makeDatabase: { $0.sql(queryLogLevel: nil) },
            afterShutdown: {
                await source.waitForOpenings()
                try? await threadPool.shutdownGracefully()
            }
        )
        let connections: SQLiteConnections
        do {
            let mode = try await whileBusy(logger: logger) {
                try await readers.withConnection { database in
                    try await database.raw("PRAGMA journal_mode = WAL").first()?.decode(
                        column: "journal_mode",
                        as: String.self
                    )
                }
            }
            if mode?.lowercased() != "wal" {
                logger.warning("SQLite did not switch the store to WAL mode", metadata: ["mode": "\(mode ?? "none")"])
            }
            let writer = try await SQLiteWriter.open(
                path: path,
                busyTimeoutMilliseconds: source.busyTimeoutMilliseconds,
                logger: driverLogger(logger)
            )
            connections = SQLiteConnections(readers: readers, writer: writer)
        } catch {
            await readers.shutdown()
            throw StoreError(mapping: error, during: "open the SQLite store")
        }
        return try await open(connections, schema: nil, migrating: migrating, logger: logger)
    }

    /// Opens a store in the PostgreSQL database of `url`.
    ///
    /// - Parameters:
    ///   - url: `postgres://USER:PASSWORD@HOST:PORT/DATABASE`, with `?sslmode=disable`, `prefer` (the default) or
    ///     `require`.
    ///   - schema: A schema of its own for siwa's tables (created when missing), or `nil` for the user's default
    ///     search path. Letters, digits and `_`, at most 63.
    ///   - maximumConnections: The most connections the store opens at once (1 to 1,000), or `nil` for
    ///     ``defaultMaximumConnections``. Every instance's, added up, must stay under the server's `max_connections`: a
    ///     connection the server refuses fails its request with ``StoreError/Code/unavailable``.
    ///   - applicationName: What PostgreSQL shows as each connection's `application_name` (`pg_stat_activity`):
    ///     `siwa restore` refuses while connections named `siwa serve` are open on the database.
    ///   - logger: For the store's debug logs and the migrations it applies.
    /// - Returns: A store at the current ``schemaVersion``.
    /// - Throws: ``StoreError/Code/invalidInput`` for a URL or schema that cannot be used (the reason never repeats
    ///   the URL: it holds the password), ``StoreError/Code/unavailable`` when the server cannot be reached or refuses
    ///   the login, ``StoreError/Code/newerSchema`` when the schema is newer than this siwa.
    /// - Warning: `url` holds the database password: read it from a secret, never log it.
    public static func postgres(
        url: String,
        schema: String? = nil,
        maximumConnections: Int? = nil,
        applicationName: String = "siwa",
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        try await postgres(
            url: url,
            schema: schema,
            maximumConnections: maximumConnections,
            migrating: true,
            applicationName: applicationName,
            logger: logger
        )
    }

    /// The most connections a PostgreSQL store opens when not told. Under 64 concurrent sign-ins on 2 cores, 16
    /// connections took 1.12–1.16× less of siwa's CPU per request than 8, the database's within its noise, and 32 or
    /// 64 gained nothing over 16 (`Benchmarks/load/pg-pool.sh`, docs/performance.md). It does not grow with the
    /// cores: six processes at the default fit PostgreSQL's default `max_connections` (100) on any machine.
    public static let defaultMaximumConnections = 16

    /// The pool limits ``postgres(url:schema:maximumConnections:logger:)`` accepts.
    public static let maximumConnectionsRange = 1...1_000

    /// ``postgres(url:schema:maximumConnections:logger:)``, migrating the schema or not (`existingPostgres`).
    static func postgres(
        url: String,
        schema: String?,
        maximumConnections: Int?,
        migrating: Bool,
        applicationName: String = "siwa",
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        if let maximumConnections, !maximumConnectionsRange.contains(maximumConnections) {
            throw StoreError(.invalidInput, "open the PostgreSQL store: the most connections is from 1 to 1,000")
        }
        var configuration: SQLPostgresConfiguration
        do {
            configuration = try SQLPostgresConfiguration(url: url)
        } catch {
            throw StoreError(.invalidInput, "open the PostgreSQL store: the URL is not a postgres:// URL siwa can use")
        }
        if let schema {
            let allowed = schema.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == 0x5F
            }
            guard allowed, !schema.isEmpty, schema.utf8.count <= 63 else {
                throw StoreError(.invalidInput, "open the PostgreSQL store: a schema name is letters, digits and _")
            }
            configuration.searchPath = [schema]
        }
        let limit = maximumConnections ?? defaultMaximumConnections
        let opener = PostgresOpener(configuration, applicationName: applicationName)
        let listener = PostgresAnnouncementListener(
            open: { logger in
                try await opener.open(logger: logger, on: MultiThreadedEventLoopGroup.singleton.any()).get()
            },
            logger: driverLogger(logger)
        )
        let connections = SQLConnectionPool(
            open: { logger, eventLoop in opener.open(logger: logger, on: eventLoop) },
            flavor: .postgres,
            limit: limit,
            logger: driverLogger(logger),
            makeDatabase: { $0.sql(queryLogLevel: nil) }
        )
        return try await open(
            connections,
            schema: schema,
            migrating: migrating,
            logger: logger,
            announcementListener: listener
        )
    }

    /// Runs a step of opening a store again while SQLite answers busy or locked (see `patience` and `attempts`).
    ///
    /// Processes that open one new file at once take turns on its first write lock: switching it to WAL and creating
    /// the schema. Each statement already waits for the busy timeout, but the first process may hold the lock longer
    /// than that on a loaded machine (creating the schema syncs the file), and a few SQLite states answer busy at once
    /// without waiting (a WAL file being recovered or reset by a connection that is closing). Opening is rare and must
    /// not fail for either, so it waits its turn. A database that stays locked still fails, once `patience` has passed
    /// and `attempts` tries were made: on a machine so loaded that the process holding the lock runs seldom, the time
    /// alone would run out while it still makes progress, and the tries keep the wait a count of turns, not of seconds.
    static func whileBusy<R: Sendable>(
        patience: Duration = .seconds(120),
        attempts: Int = 60,
        logger: Logger,
        _ step: () async throws -> R
    ) async throws -> R {
        let deadline = ContinuousClock.now + patience
        var pause = Duration.milliseconds(20)
        var tries = 0
        while true {
            do {
                tries += 1
                return try await step()
            } catch let error where Self.isBusy(error) {
                guard ContinuousClock.now + pause < deadline || tries < attempts else { throw error }
                logger.debug("the SQLite file is busy: another connection is opening or migrating it; waiting")
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(500))
            }
        }
    }

    private static func isBusy(_ error: any Error) -> Bool {
        if let error = error as? SQLiteWriterError { return error.isBusy }
        guard let reason = (error as? SQLiteError)?.reason else { return false }
        return switch reason {
        case .busy, .locked, .busyInRecovery, .busyInSnapshot, .busyTimeout, .lockedBySharedCache: true
        default: false
        }
    }

    /// Creates the database file readable by its owner only (0600) when it does not exist yet. SQLite creates the
    /// `-wal` and `-shm` files with the database file's permissions, so they are private too.
    private static func createPrivately(_ path: String) throws {
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            Glibc.close(descriptor)
            return
        }
        guard errno == EEXIST else { throw StoreError(.unavailable, "errno \(errno)") }
    }

    /// `logger` for the pool and the drivers, at debug or above: at trace, PostgresNIO logs every message from the
    /// server, and a unique violation's message quotes the key (a hash, a nonce).
    private static func driverLogger(_ logger: Logger) -> Logger {
        var driverLogger = logger
        driverLogger.logLevel = max(logger.logLevel, .debug)
        return driverLogger
    }

    /// Migrates the database behind `connections` (or, unless `migrating`, checks that its schema is current) and
    /// wraps it; closes the connections on failure.
    private static func open(
        _ connections: any SQLConnections,
        schema: String?,
        migrating: Bool,
        logger: Logger,
        announcementListener: PostgresAnnouncementListener? = nil
    ) async throws(StoreError) -> SQLAccountStore {
        guard migrating else {
            return try await openAsItIs(connections, logger: logger)
        }
        let before: Int
        do {
            before = try await whileBusy(logger: logger) {
                try await SQLSchema.migrate(connections, schema: schema, logger: logger)
            }
            logger.debug(
                "opened the SQL store",
                metadata: [
                    "database": "\(connections.flavor)", "from_version": "\(before)", "version": "\(schemaVersion)",
                ]
            )
        } catch {
            await connections.shutdown()
            throw StoreError(mapping: error, during: "migrate the store")
        }
        return SQLAccountStore(
            connections: connections,
            logger: logger,
            openedAtSchemaVersion: before,
            announcementListener: announcementListener
        )
    }

    /// Tests only: ends every connection to this database that listens for announcements, as a restart or a failover
    /// of the server would; returns how many it ended.
    package func terminateListeningConnections() async throws(StoreError) -> Int {
        try await read("end the listening connections") { database in
            let row = try await database.raw(
                """
                SELECT count(pg_terminate_backend(pid)) AS ended FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                    AND query LIKE \(bind: "LISTEN%\(SQLSchema.announcementChannel)%")
                """
            ).first()
            return Int(try row?.decode(column: "ended", as: Int64.self) ?? 0)
        }
    }

    /// On PostgreSQL, what other instances and operator commands end and change, heard on one connection of the
    /// store's own beside the pool (``PostgresAnnouncementListener``); `nil` on SQLite.
    public func announcements() -> AsyncStream<StoreAnnouncement>? {
        announcementListener?.stream()
    }

    /// On PostgreSQL, the counts every instance adds to for the limits of the whole deployment
    /// (``PostgresSharedCounters``, on the store's pool); `nil` on SQLite, whose one process counts in memory.
    public func sharedCounters() -> (any SharedCounters)? {
        connections.flavor == .postgres ? PostgresSharedCounters(store: self) : nil
    }

    /// Wraps the database behind `connections` if its schema is the current one, changing nothing; closes the
    /// connections otherwise.
    private static func openAsItIs(
        _ connections: any SQLConnections,
        logger: Logger
    ) async throws(StoreError) -> SQLAccountStore {
        let found: Int
        do {
            let flavor = connections.flavor
            found = try await whileBusy(logger: logger) {
                try await connections.withConnection { database in
                    try await SQLSchema.appliedVersion(ifCreatedIn: database, flavor: flavor)
                }
            }
        } catch {
            await connections.shutdown()
            throw StoreError(mapping: error, during: "read the schema version")
        }
        guard found == schemaVersion else {
            await connections.shutdown()
            if found > schemaVersion { throw SQLSchema.newerSchema(found) }
            throw StoreError(
                .unavailable,
                "the database has schema version \(found) and this siwa's is \(schemaVersion): siwa migrate upgrades it"
            )
        }
        return SQLAccountStore(connections: connections, logger: logger, openedAtSchemaVersion: found)
    }

    /// Closes every pooled connection. Calls afterwards fail with ``StoreError/Code/unavailable``; a second call does
    /// nothing.
    ///
    /// - Warning: Call it before the last reference to the store goes away: the drivers assert in debug builds when a
    ///   connection is released open.
    public func shutdown() async {
        await connections.shutdown()
    }

    /// The highest migration applied to the database (``schemaVersion`` once the store is open).
    public func appliedSchemaVersion() async throws(StoreError) -> Int {
        try await read("read the schema version") { database in try await SQLSchema.appliedVersion(database) }
    }

    // MARK: Running statements

    /// Runs `body` on a pooled connection, outside a transaction (for single statements).
    func read<R: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws(StoreError) -> R {
        do {
            return try await connections.withConnection(body)
        } catch {
            throw failure(error, operation)
        }
    }

    /// Runs `body` in a transaction on a pooled connection: all of it or none of it.
    func write<R: Sendable>(
        _ operation: String,
        lock: SQLTransactionLock? = nil,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws(StoreError) -> R {
        do {
            return try await connections.withTransaction(lock: lock, body)
        } catch {
            throw failure(error, operation)
        }
    }

    /// Runs `body`'s write statements, each committing on its own (on SQLite in turn with the other writers).
    func writeStatements<R: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws(StoreError) -> R {
        do {
            return try await connections.withWriteStatements(body)
        } catch {
            throw failure(error, operation)
        }
    }

    /// SQLite only: runs `body` as one job on the writer's connection (see ``SQLiteWriter``), after the writes queued
    /// before it. `body` runs on the writer's thread.
    func sqliteWriter<R: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (SQLiteWriter.Connection) throws -> R
    ) async throws(StoreError) -> R {
        do {
            guard let sqlite = connections as? SQLiteConnections else {
                throw StoreError(.invalidInput, "a SQLite statement was sent to \(connections.flavor)")
            }
            return try await sqlite.writer.perform(body)
        } catch {
            throw failure(error, operation)
        }
    }

    /// PostgreSQL only: runs `body` with the driver's connection (prepared statements), outside a transaction.
    func postgres<R: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> R
    ) async throws(StoreError) -> R {
        let logger = driverLogger
        do {
            return try await connections.withPostgresConnection { connection in try await body(connection, logger) }
        } catch {
            throw failure(error, operation)
        }
    }

    private func failure(_ error: any Error, _ operation: String) -> StoreError {
        let mapped = StoreError(mapping: error, during: operation)
        logger.debug("store operation failed", metadata: ["error": "\(mapped)"])
        return mapped
    }
}

/// Opens PostgreSQL connections with siwa's settings: the search path when the store has a schema of its own, and a
/// deadline for the whole opening (PostgresNIO's `connectTimeout` covers the TCP connect only, not the startup and
/// login, which a server that is starting or stopping may leave unanswered).
private struct PostgresOpener: Sendable {
    let configuration: PostgresConnection.Configuration
    let searchPath: [String]?
    let deadline: TimeAmount
    private static let ids = Atomic<Int>(0)

    init(_ configuration: SQLPostgresConfiguration, applicationName: String, deadline: TimeAmount = .seconds(10)) {
        var core = configuration.coreConfiguration
        core.options.additionalStartupParameters.append(("application_name", applicationName))
        self.configuration = core
        self.searchPath = configuration.searchPath
        self.deadline = deadline
    }

    func open(logger: Logger, on eventLoop: any EventLoop) -> EventLoopFuture<PostgresConnection> {
        let id = Self.ids.add(1, ordering: .relaxed).newValue
        let searchPath = self.searchPath
        let opened = PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
            .flatMap { connection -> EventLoopFuture<PostgresConnection> in
                guard let searchPath else { return eventLoop.makeSucceededFuture(connection) }
                return connection.sql(queryLogLevel: nil)
                    .raw("SET search_path TO \(idents: searchPath, joinedBy: ",")")
                    .run()
                    .map { connection }
                    .flatMapError { error in connection.close().flatMapThrowing { throw error } }
            }
        let answer = eventLoop.makePromise(of: PostgresConnection.self)
        let answered = NIOLockedValueBox(false)
        let late = eventLoop.scheduleTask(in: deadline) {
            let first = answered.withLockedValue { already in
                defer { already = true }
                return !already
            }
            guard first else { return }
            answer.fail(StoreError(.unavailable, "the database did not finish opening a connection in time"))
        }
        opened.whenComplete { result in
            late.cancel()
            let first = answered.withLockedValue { already in
                defer { already = true }
                return !already
            }
            switch result {
            case .success(let connection) where first:
                answer.succeed(connection)
            case .success(let connection):
                connection.close().whenComplete { _ in }  // too late: nobody takes it
            case .failure(let error):
                if first { answer.fail(error) }
            }
        }
        return answer.futureResult
    }
}
