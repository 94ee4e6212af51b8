import AccountStore
import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO
import SiwaSQLite3
import Synchronization

/// The one connection that writes to a SQLite store, on a thread of its own, with its statements prepared once.
///
/// SQLite takes one writer at a time per file, so a pool of writing connections only queues them on SQLite's lock,
/// and each write paid for what the pool cannot share: its statement compiled anew (SQLiteNIO prepares every
/// statement), a hop to SQLiteNIO's thread pool and back for every statement, and a page cache that the other
/// connections' writes had invalidated. Here every write of the process runs on this one connection: its statements
/// are compiled once and kept (``Connection``), its page cache stays warm because nobody else writes, and a write of
/// the request path is one job: one hop to the writer's thread and one back.
///
/// Jobs run one at a time in arrival order. A transaction (``withTransaction(_:)``) holds the writer from its `BEGIN`
/// to its `COMMIT`: while it is open, only its own statements run, and other jobs wait in their order. Reads go to the
/// store's other connections (WAL lets them read while this one writes).
///
/// Other processes may write to the same file (the CLI's operator commands): the connection waits for their lock up to
/// the store's busy timeout.
final class SQLiteWriter: Sendable {
    /// The connection; touched on the writer's thread only (a job runs there, one at a time).
    private let connection: Connection
    private let thread: NIOThreadPool
    private let state = Mutex(State())
    let logger: Logger
    /// The event loop of SQLKit's futures (the writer itself needs none).
    let eventLoop: any EventLoop
    /// Groups of jobs committed together (see ``runGrouped(_:)``), for tests and benchmarks.
    let groupsCommitted = Atomic<Int>(0)

    /// Jobs waiting outside any transaction, for tests and benchmarks.
    var queuedJobs: Int { state.withLock { $0.queue.count - $0.queueStart } }

    private struct State {
        /// Jobs outside any transaction, in arrival order.
        var queue: [Job] = []
        var queueStart = 0
        /// The open transaction's statements.
        var transactionQueue: [Job] = []
        /// The open transaction's number (set by its `BEGIN`, cleared by its `COMMIT` or `ROLLBACK`).
        var transaction: UInt64?
        /// The open transaction's closing job is queued: it takes no statement after it.
        var closing = false
        var lastTransaction: UInt64 = 0
        /// Whether a drain runs or is scheduled on the thread.
        var draining = false
        var closed = false

        /// The next jobs to run: the open transaction's next statement, or the queued jobs that may share one commit
        /// (up to `limit`, in order), or the one job that opens a transaction or closes the connection.
        mutating func next(limit: Int) -> [Job] {
            if transaction != nil {
                return transactionQueue.isEmpty ? [] : [transactionQueue.removeFirst()]
            }
            var jobs: [Job] = []
            while queueStart < queue.count, jobs.count < limit {
                let job = queue[queueStart]
                guard job.groupable || jobs.isEmpty else { break }
                jobs.append(job)
                queueStart += 1
                if !job.groupable { break }
            }
            if queueStart == queue.count {
                queue.removeAll(keepingCapacity: true)
                queueStart = 0
            } else if queueStart >= 1_024, queueStart * 2 >= queue.count {
                queue.removeFirst(queueStart)  // a queue that never empties under load does not keep what ran
                queueStart = 0
            }
            return jobs
        }
    }

    /// Work for the writer's thread.
    private struct Job: Sendable {
        /// Whether it may share a commit with the jobs queued next to it: a write outside any transaction.
        let groupable: Bool
        /// Does the work and tells whether it failed; the answer it returns gives the caller its result once the
        /// work is committed, or the commit's error.
        let run: @Sendable (Connection) -> (failed: Bool, answer: @Sendable ((any Error)?) -> Void)
        /// Answers the caller with `error` without running the work.
        let reject: @Sendable (any Error) -> Void
    }

    /// What a job is to the queues.
    private enum Role {
        /// A write of its own (grouped with its neighbours).
        case free
        /// The `BEGIN` of transaction `id`.
        case opens(UInt64)
        /// A statement of transaction `id`.
        case statement(UInt64)
        /// The `COMMIT` or `ROLLBACK` of transaction `id`.
        case closes(UInt64)
    }

    /// The most jobs one commit takes.
    private static let groupLimit = 64

    /// The size past which the write-ahead log's file is cut back when the log restarts (64 MiB).
    static let journalSizeLimit = 64 << 20

    private init(connection: Connection, thread: NIOThreadPool, logger: Logger) {
        self.connection = connection
        self.thread = thread
        self.logger = logger
        self.eventLoop = MultiThreadedEventLoopGroup.singleton.any()
    }

    /// Opens the writer's connection to `path` with siwa's settings: the busy timeout, foreign keys, `synchronous =
    /// NORMAL` (safe in WAL mode: a commit survives a crash of the process; docs/reliability.md says what a power
    /// loss may take) and the temporary views and triggers of ``SQLiteStatements``.
    static func open(path: String, busyTimeoutMilliseconds: Int, logger: Logger) async throws -> SQLiteWriter {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        let connection = Connection()
        do {
            try await onThread(thread) {
                try connection.open(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            }
        } catch {
            try? await onThread(thread) { connection.close() }
            try? await thread.shutdownGracefully()
            throw error
        }
        return SQLiteWriter(connection: connection, thread: thread, logger: logger)
    }

    /// Runs `body` on `thread`, also when the calling task is cancelled (`runIfActive` would then skip it).
    private static func onThread<R: Sendable>(
        _ thread: NIOThreadPool,
        _ body: @escaping @Sendable () throws -> R
    ) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            thread.submit { _ in continuation.resume(with: Result { try body() }) }
        }
    }

    // MARK: Running jobs

    /// Runs `body` on the writer's connection after every job that came before it, in a transaction of its own or
    /// shared with the writes queued next to it (all of `body`'s writes or none, whichever way), answered after
    /// the commit. `body` runs on the writer's thread and must not block on anything else.
    func perform<R: Sendable>(_ body: @escaping @Sendable (Connection) throws -> R) async throws -> R {
        try await submit(.free, body)
    }

    /// Runs `body` in a transaction on the writer: committed when `body` returns, rolled back when it throws. Other
    /// writes wait until it ends; its own statements run through the ``SQLDatabase`` it is given, which refuses
    /// statements once the transaction ends.
    func withTransaction<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        let id = state.withLock { state -> UInt64 in
            state.lastTransaction &+= 1
            return state.lastTransaction
        }
        try await submit(.opens(id)) { connection in
            try connection.endLeftoverTransaction()
            try connection.execute("BEGIN IMMEDIATE")
        }
        let database = Database(writer: self, transaction: id)
        let result: R
        do {
            result = try await body(database)
        } catch {
            try? await submit(.closes(id)) { connection in try connection.rollBack() }
            throw error
        }
        // A COMMIT that fails leaves the transaction open (a deferred constraint, SQLITE_BUSY): rolled back in the
        // same job, so that the writer never goes on inside it.
        try await submit(.closes(id)) { connection in
            do {
                try connection.execute("COMMIT")
            } catch {
                connection.abandonTransaction()
                throw error
            }
        }
        return result
    }

    /// An ``SQLDatabase`` whose statements each run as a write of their own.
    var database: any SQLDatabase { Database(writer: self, transaction: nil) }

    /// Closes the connection after the writes already accepted (and after an open transaction ends), then stops the
    /// thread. Writes afterwards fail with ``StoreError/Code/unavailable``.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let close = Job(
                groupable: false,
                run: { connection in
                    connection.close()
                    return (false, { _ in continuation.resume() })
                },
                reject: { _ in continuation.resume() }
            )
            let start = state.withLock { state -> Bool? in
                guard !state.closed else { return nil }
                state.closed = true
                state.queue.append(close)
                defer { state.draining = true }
                return !state.draining
            }
            switch start {
            case nil: continuation.resume()  // already shut down
            case true?: thread.submit { [self] _ in drain() }
            case false?: break
            }
        }
        try? await thread.shutdownGracefully()
    }

    private func submit<R: Sendable>(
        _ role: Role,
        _ body: @escaping @Sendable (Connection) throws -> R
    ) async throws -> R {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            var groupable = false
            if case .free = role { groupable = true }
            let job = Job(
                groupable: groupable,
                run: { [self] connection in
                    let result = Result { try body(connection) }
                    switch role {
                    case .opens(let id):
                        if case .success = result {
                            state.withLock { state in
                                state.transaction = id
                                state.closing = false
                            }
                        }
                    case .closes:
                        state.withLock { state in
                            state.transaction = nil
                            state.closing = false
                        }
                    case .free, .statement:
                        break
                    }
                    let failed: Bool
                    if case .failure = result { failed = true } else { failed = false }
                    return (
                        failed,
                        { commitError in
                            if let commitError, !failed {
                                continuation.resume(throwing: commitError)
                            } else {
                                continuation.resume(with: result)
                            }
                        }
                    )
                },
                reject: { error in continuation.resume(throwing: error) }
            )
            let start = state.withLock { state -> Bool? in
                switch role {
                case .free, .opens:
                    if state.closed { return nil }
                    state.queue.append(job)
                case .statement(let id):
                    // A statement of a transaction that has ended or is ending (its `SQLDatabase` kept past the
                    // closure, or a statement it did not await) would wait for the next transaction and run in it.
                    guard state.transaction == id, !state.closing else { return nil }
                    state.transactionQueue.append(job)
                case .closes(let id):
                    guard state.transaction == id, !state.closing else { return nil }
                    state.closing = true
                    state.transactionQueue.append(job)
                }
                defer { state.draining = true }
                return !state.draining
            }
            switch start {
            case nil:
                continuation.resume(
                    throwing: StoreError(.unavailable, "the store is shut down, or the statement's transaction ended")
                )
            case true?:
                thread.submit { [self] _ in drain() }
            case false?:
                break
            }
        }
    }

    /// Runs jobs on the writer's thread until none can run now.
    private func drain() {
        while true {
            let jobs = state.withLock { state -> [Job] in
                let jobs = state.next(limit: Self.groupLimit)
                if jobs.isEmpty { state.draining = false }
                return jobs
            }
            if jobs.isEmpty { return }
            if jobs.count == 1, !jobs[0].groupable {
                jobs[0].run(connection).answer(nil)  // a transaction's step, or the close
            } else {
                runGrouped(jobs)
            }
        }
    }

    /// Runs writes in one transaction, each inside a savepoint of its own (a write that fails leaves nothing behind
    /// and fails alone; a write alone in its group needs none, see ``runAlone(_:)``), and answers them once that transaction commits: group commit for the writes that queued
    /// while the writer was busy, and all or nothing for each.
    ///
    /// Each commit appends every page it changed to the write-ahead log; the writes of a burst change many of the same
    /// pages (the tail of each time-ordered index, the accounts' pages), which one commit writes once. An answer still
    /// comes only after its write is committed, so what a client was told survives a crash of the process as before.
    private func runGrouped(_ jobs: [Job]) {
        do {
            try connection.endLeftoverTransaction()
            try connection.begin()
        } catch {
            // Another process holds the lock past the busy timeout, or a transaction cannot be ended: nothing runs.
            for job in jobs { job.reject(error) }
            return
        }
        if jobs.count == 1 {
            runAlone(jobs[0])
            return
        }
        var answers: [@Sendable ((any Error)?) -> Void] = []
        answers.reserveCapacity(jobs.count)
        for (index, job) in jobs.enumerated() {
            var ran: (@Sendable ((any Error)?) -> Void)?
            do {
                try connection.savepoint()
                let (failed, answer) = job.run(connection)
                ran = answer
                try connection.releaseSavepoint(rollingBack: failed)
                answers.append(answer)
            } catch {
                // SQLite ended the transaction itself (some I/O errors do): what the group wrote so far is gone, this
                // job's too if it ran; the rest are not run.
                connection.abandonTransaction()
                for answer in answers { answer(error) }
                if let ran { ran(error) } else { job.reject(error) }
                for job in jobs[(index + 1)...] { job.reject(error) }
                return
            }
        }
        do {
            try connection.commit()
            groupsCommitted.add(1, ordering: .relaxed)
            for answer in answers { answer(nil) }
        } catch {
            connection.abandonTransaction()
            for answer in answers { answer(error) }
        }
    }

    /// Runs a write that is alone in its group, in the transaction ``runGrouped(_:)`` began, without a savepoint: when
    /// it fails, rolling the transaction back undoes it and nothing else. That spares the savepoint's two statements
    /// and its sub-journal's copy of every page the write changes, for the write that had no neighbours to wait for.
    private func runAlone(_ job: Job) {
        let (failed, answer) = job.run(connection)
        if failed {
            // A rollback that fails leaves the transaction open; the next group's `endLeftoverTransaction` ends it or
            // refuses to run.
            connection.abandonTransaction()
            answer(nil)  // the job's own failure
            return
        }
        do {
            try connection.commit()
            answer(nil)
        } catch {
            connection.abandonTransaction()
            answer(error)
        }
    }
}

// MARK: - The connection

extension SQLiteWriter {
    /// One `sqlite3` handle and its prepared statements. Only the writer's thread touches it, one job at a time.
    final class Connection: @unchecked Sendable {
        private var handle: OpaquePointer?
        /// Statements prepared once and reset after each use, by their SQL. SQLKit's statements are the code's own
        /// (values are bound, never spliced in), so they are few; the cache is emptied if it ever grows past
        /// ``statementLimit``.
        private var statements: [String: OpaquePointer] = [:]
        private static let statementLimit = 256

        /// How many statements are kept prepared (for tests).
        var preparedStatements: Int { statements.count }

        func open(path: String, busyTimeoutMilliseconds: Int) throws(SQLiteWriterError) {
            var handle: OpaquePointer?
            let flags =
                SIWA_SQLITE_OPEN_READWRITE | SIWA_SQLITE_OPEN_CREATE | SIWA_SQLITE_OPEN_NOMUTEX
                | SIWA_SQLITE_OPEN_EXRESCODE
            let opened = sqlite_nio_sqlite3_open_v2(path, &handle, Int32(flags), nil)
            self.handle = handle
            guard opened == SIWA_SQLITE_OK else {
                throw SQLiteWriterError(code: opened, message: "the file cannot be opened")
            }
            _ = sqlite_nio_sqlite3_busy_timeout(handle, Int32(clamping: busyTimeoutMilliseconds))
            try execute("PRAGMA foreign_keys = ON")
            try execute("PRAGMA synchronous = NORMAL")
            // SQLite reuses its write-ahead log's file rather than shrink it: a log that grew (a large transaction, or
            // checkpoints held back while a long read, such as a backup, kept its snapshot) would keep that size for
            // good. Past 64 MiB it is cut back once the log restarts; the log of ordinary writes (checkpointed every
            // 1,000 pages, about 4 MiB) never reaches that.
            try execute("PRAGMA journal_size_limit = \(SQLiteWriter.journalSizeLimit)")
            // Every write that shares its group runs in a savepoint (and a trigger's statements in statement
            // journals) inside the group's transaction. SQLite copies each page a savepoint changes into a sub-journal first, and spills that to a
            // temporary file past 64 KiB, which one sign-in's pages exceed: a `pwrite` per page, a quarter of the
            // writer's time in a sign-in's profile. In memory the copies stay memory copies. The transient tables
            // SQLite builds for some statements (`IN` lists, `DISTINCT`) are kept in memory too. Housekeeping deletes in
            // batches (`purgeBatch`), so no single write changes more than a few megabytes of pages. It must come before
            // the setup below: changing `temp_store` drops the connection's temporary views and triggers.
            try execute("PRAGMA temp_store = MEMORY")
            for statement in SQLiteStatements.connectionSetup { try execute(statement) }
        }

        func close() {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
            statements = [:]
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
            handle = nil
        }

        /// Runs statements without parameters or results (`BEGIN`, `COMMIT`, `PRAGMA`s).
        func execute(_ sql: String) throws(SQLiteWriterError) {
            guard let handle else { throw SQLiteWriterError(code: 21, message: "the connection is closed") }
            let code = siwa_sqlite3_exec(handle, sql)
            guard code == SIWA_SQLITE_OK else { throw error(code) }
        }

        /// Starts a group's transaction (see ``SQLiteWriter/runGrouped(_:)``).
        func begin() throws(SQLiteWriterError) {
            _ = try run("BEGIN IMMEDIATE", [])
        }

        /// Commits a group's transaction.
        func commit() throws(SQLiteWriterError) {
            _ = try run("COMMIT", [])
        }

        /// Rolls back a transaction that an earlier failure left open (a ROLLBACK that failed); throws when it stays
        /// open, so that no write runs inside it unanswered by a commit.
        func endLeftoverTransaction() throws(SQLiteWriterError) {
            try rollBack()
            guard let handle, sqlite_nio_sqlite3_get_autocommit(handle) != 0 else {
                throw SQLiteWriterError(code: 4, message: "a transaction cannot be ended")  // SQLITE_ABORT
            }
        }

        /// Starts a group's job (see ``SQLiteWriter/runGrouped(_:)``).
        func savepoint() throws(SQLiteWriterError) {
            _ = try run("SAVEPOINT job", [])
        }

        /// Ends a group's job: keeps its writes, or undoes them when it failed.
        func releaseSavepoint(rollingBack: Bool) throws(SQLiteWriterError) {
            guard let handle, sqlite_nio_sqlite3_get_autocommit(handle) == 0 else {
                throw SQLiteWriterError(code: 4, message: "the transaction ended")  // SQLITE_ABORT
            }
            if rollingBack { _ = try run("ROLLBACK TO job", []) }
            _ = try run("RELEASE job", [])
        }

        /// Rolls back a group whose transaction failed, if SQLite has not already.
        func abandonTransaction() {
            try? rollBack()
        }

        /// Rolls back an open transaction; nothing when none is open.
        func rollBack() throws(SQLiteWriterError) {
            guard let handle, sqlite_nio_sqlite3_get_autocommit(handle) == 0 else { return }
            try execute("ROLLBACK")
        }

        /// Runs one statement with `binds` (for `?1`, `?2` …) and returns its rows.
        func run(_ sql: String, _ binds: [SQLiteData]) throws(SQLiteWriterError) -> [Row] {
            let statement = try prepared(sql)
            defer {
                sqlite_nio_sqlite3_reset(statement)
                sqlite_nio_sqlite3_clear_bindings(statement)
            }
            for (offset, value) in binds.enumerated() {
                let index = Int32(offset + 1)
                let code: Int32
                switch value {
                case .integer(let integer): code = sqlite_nio_sqlite3_bind_int64(statement, index, Int64(integer))
                case .float(let double): code = sqlite_nio_sqlite3_bind_double(statement, index, double)
                case .text(let text):
                    code = text.withCString { siwa_sqlite3_bind_text(statement, index, $0, UInt64(text.utf8.count)) }
                case .blob(let buffer):
                    code = buffer.withUnsafeReadableBytes { bytes in
                        siwa_sqlite3_bind_blob(statement, index, bytes.baseAddress, UInt64(bytes.count))
                    }
                case .null: code = sqlite_nio_sqlite3_bind_null(statement, index)
                }
                guard code == SIWA_SQLITE_OK else { throw error(code) }
            }
            var rows: [Row] = []
            var columns: Columns?
            while true {
                let code = sqlite_nio_sqlite3_step(statement)
                if code == SIWA_SQLITE_DONE { return rows }
                guard code == SIWA_SQLITE_ROW else { throw error(code) }
                let names = columns ?? Columns(statement)
                columns = names
                var values: [SQLiteData] = []
                values.reserveCapacity(names.names.count)
                for column in 0..<Int32(names.names.count) { values.append(Self.value(statement, column)) }
                rows.append(Row(columns: names, values: values))
            }
        }

        private func prepared(_ sql: String) throws(SQLiteWriterError) -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            guard let handle else { throw SQLiteWriterError(code: 21, message: "the connection is closed") }
            if statements.count >= Self.statementLimit {
                for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
                statements = [:]
            }
            var statement: OpaquePointer?
            let code = sqlite_nio_sqlite3_prepare_v3(
                handle,
                sql,
                -1,
                UInt32(SIWA_SQLITE_PREPARE_PERSISTENT),
                &statement,
                nil
            )
            guard code == SIWA_SQLITE_OK, let statement else { throw error(code) }
            statements[sql] = statement
            return statement
        }

        private static func value(_ statement: OpaquePointer, _ column: Int32) -> SQLiteData {
            switch sqlite_nio_sqlite3_column_type(statement, column) {
            case SIWA_SQLITE_INTEGER: return .integer(Int(sqlite_nio_sqlite3_column_int64(statement, column)))
            case SIWA_SQLITE_FLOAT: return .float(sqlite_nio_sqlite3_column_double(statement, column))
            case SIWA_SQLITE_TEXT:
                guard let text = sqlite_nio_sqlite3_column_text(statement, column) else { return .null }
                let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
                return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
            case SIWA_SQLITE_BLOB:
                let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
                var buffer = ByteBufferAllocator().buffer(capacity: count)
                if let blob = sqlite_nio_sqlite3_column_blob(statement, column) {
                    buffer.writeBytes(UnsafeRawBufferPointer(start: blob, count: count))
                }
                return .blob(buffer)
            default:
                return .null
            }
        }

        private func error(_ code: Int32) -> SQLiteWriterError {
            let message = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? ""
            return SQLiteWriterError(code: code, message: message)
        }
    }

    /// The names of a statement's result columns, shared by its rows.
    final class Columns: Sendable {
        let names: [String]
        private let indices: [String: Int]

        init(_ statement: OpaquePointer) {
            let count = Int(sqlite_nio_sqlite3_column_count(statement))
            let names = (0..<count).map { column in
                sqlite_nio_sqlite3_column_name(statement, Int32(column)).map { String(cString: $0) } ?? ""
            }
            var indices: [String: Int] = [:]
            for (index, name) in names.enumerated() where indices[name] == nil { indices[name] = index }
            self.names = names
            self.indices = indices
        }

        func index(of name: String) -> Int? { indices[name] }
    }

    /// A result row, read through SQLiteKit's decoder (as SQLiteNIO's rows are).
    struct Row: SQLRow {
        let columns: Columns
        let values: [SQLiteData]

        var allColumns: [String] { columns.names }

        func contains(column: String) -> Bool { columns.index(of: column) != nil }

        func decodeNil(column: String) throws -> Bool {
            guard let index = columns.index(of: column) else { return true }
            return values[index] == .null
        }

        func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
            guard let index = columns.index(of: column) else {
                throw DecodingError.keyNotFound(
                    SQLiteWriterColumnKey(stringValue: column),
                    .init(codingPath: [], debugDescription: "no column \(column)")
                )
            }
            return try SQLiteDataDecoder().decode(D.self, from: values[index])
        }
    }

    /// SQLKit's view of the writer: each statement one job, or one of the open transaction's.
    struct Database: SQLDatabase {
        let writer: SQLiteWriter
        /// The transaction its statements belong to; `nil`: each is a write of its own.
        let transaction: UInt64?

        var logger: Logger { writer.logger }
        var eventLoop: any EventLoop { writer.eventLoop }
        var dialect: any SQLDialect { SQLiteDialect() }
        /// Off: a statement's log would carry its bound values.
        var queryLogLevel: Logger.Level? { nil }

        func execute(
            sql query: any SQLExpression,
            _ onRow: @escaping @Sendable (any SQLRow) -> Void
        ) -> EventLoopFuture<Void> {
            let promise = eventLoop.makePromise(of: Void.self)
            promise.completeWithTask { try await self.execute(sql: query, onRow) }
            return promise.futureResult
        }

        func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
            let (sql, binds) = serialize(query)
            let encoder = SQLiteDataEncoder()
            let values = try binds.map { try encoder.encode($0) }
            let rows = try await writer.submit(transaction.map { .statement($0) } ?? .free) { connection in
                try connection.run(sql, values)
            }
            for row in rows { onRow(row) }
        }
    }
}

/// A column that a row does not have.
private struct SQLiteWriterColumnKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// What SQLite answered on the writer's connection: its extended result code, and its message (which may quote a
/// value: never logged, and never part of ``description``).
struct SQLiteWriterError: Error, CustomStringConvertible {
    let code: Int32
    let message: String

    /// The primary result code (`SQLITE_CONSTRAINT` for `SQLITE_CONSTRAINT_UNIQUE`).
    var primaryCode: Int32 { code & 0xFF }

    var description: String { "SQLite result code \(code)" }

    /// `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection holds the lock.
    var isBusy: Bool { primaryCode == 5 || primaryCode == 6 }
}
