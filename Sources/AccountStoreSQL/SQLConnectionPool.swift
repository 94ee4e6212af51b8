import AccountStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import SQLiteNIO
import Synchronization

/// What the pool needs of a driver's connection.
protocol PooledConnection: AnyObject, Sendable {
    var isClosed: Bool { get }
    func close() -> EventLoopFuture<Void>
    /// Completes when the connection closes, for drivers that may lose a statement sent on a closing connection
    /// (see ``SQLConnectionPool``); `nil` where a statement on a closed connection always fails.
    var lossySignal: EventLoopFuture<Void>? { get }
}

extension PostgresConnection: PooledConnection {
    var lossySignal: EventLoopFuture<Void>? { closeFuture }
}

extension SQLiteConnection: PooledConnection {
    var lossySignal: EventLoopFuture<Void>? { nil }
}

/// ``SQLConnections`` to one database: up to `limit` connections, opened on demand and kept for reuse, leased under a
/// lock with no thread hop.
///
/// AsyncKit's `EventLoopGroupConnectionPool` (used before) keeps a pool per event loop and works through futures: a
/// lease and a release each hopped to an event loop and back, as many hops as the statements themselves make
/// (SQLiteNIO's thread pool, PostgresNIO's channel), and a request queued behind its own loop's connections while
/// the other loop's were free. Here a lease takes an idle connection under a `Mutex`, or opens one, or waits for the
/// next release in arrival order. On SQLite, the pool serves reads only: writes go to
/// the ``SQLiteWriter``.
///
/// PostgresNIO sends a statement with `channel.write(task, promise: nil)`: a statement sent on a connection whose
/// channel has closed (PostgreSQL restarting ends every session) and lost its handlers is dropped without failing,
/// and its caller waits forever, holding its lease: requests that never answer, a pool that runs dry, a shutdown that
/// never ends (seen in `Benchmarks/load/pg-restart.sh`, 6 of ~4,800 requests in a run). So on such a driver a lease's
/// work runs in a task of its own, and when its connection closes and the work has not finished `lossGrace` later,
/// the lease gives up: its caller gets ``StoreError/Code/unavailable`` (503, which a client retries) and its place
/// in the pool is freed. Work that the driver does fail (every statement sent before the close) ends before that.
final class SQLConnectionPool<Connection: PooledConnection>: SQLConnections {
    /// Opens a connection on an event loop.
    typealias Opener = @Sendable (Logger, any EventLoop) -> EventLoopFuture<Connection>
    let flavor: SQLFlavor
    private let open: Opener
    /// The most connections open at once.
    let limit: Int
    private let logger: Logger
    private let makeDatabase: @Sendable (Connection) -> any SQLDatabase
    private let state = Mutex(State())
    private let afterShutdown: @Sendable () async -> Void
    private let lossGrace: TimeAmount

    private struct State {
        var idle: [Pooled] = []
        /// Connections open or being opened, leased or idle.
        var count = 0
        var waiters: [CheckedContinuation<Handover, Never>] = []
        var closed = false
    }

    /// A connection as the pool keeps it: with, on a lossy driver, what its current lease would do to give up.
    private final class Pooled: Sendable {
        let connection: Connection
        /// `closed` once the connection's close was seen; `abandon` while a lease's work runs.
        let watch = Mutex<(closed: Bool, abandon: (@Sendable () -> Bool)?)>((false, nil))
        init(_ connection: Connection) { self.connection = connection }
    }

    /// What a waiting lease is given.
    private enum Handover: Sendable {
        case connection(Pooled)
        /// A connection went away (failed to open, or was discarded): try again, opening one if there is room.
        case retry
        case closed
    }

    /// - Parameters:
    ///   - open: Opens a connection with siwa's settings.
    ///   - flavor: The database family.
    ///   - limit: The most connections open at once.
    ///   - logger: For debug logs (and the drivers').
    ///   - makeDatabase: The SQLKit view of a connection (with query logging off: it would log bound values).
    ///   - afterShutdown: Runs once every connection is closed (to stop what they ran on).
    ///   - lossGrace: How long a lease's work may still run after its connection closed (on a lossy driver).
    init(
        open: @escaping Opener,
        flavor: SQLFlavor,
        limit: Int,
        logger: Logger,
        makeDatabase: @escaping @Sendable (Connection) -> any SQLDatabase,
        afterShutdown: @escaping @Sendable () async -> Void = {},
        lossGrace: TimeAmount = .seconds(1)
    ) {
        self.lossGrace = lossGrace
        self.open = open
        self.flavor = flavor
        self.limit = max(1, limit)
        self.logger = logger
        self.makeDatabase = makeDatabase
        self.afterShutdown = afterShutdown
    }

    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R
    {
        try await lease { connection in try await body(self.makeDatabase(connection)) }
    }

    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await lease { connection in
            try await runTransaction(
                on: self.makeDatabase(connection),
                flavor: self.flavor,
                lock: lock,
                logger: self.logger,
                discard: { try? await connection.close().get() },
                body
            )
        }
    }

    func withWriteStatements<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        try await withConnection(body)
    }

    func withPostgresConnection<R: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await lease { connection in
            guard let postgres = connection as? PostgresConnection else {
                throw StoreError(.invalidInput, "a PostgreSQL statement was sent to \(self.flavor)")
            }
            return try await body(postgres)
        }
    }

    /// Closes idle connections at once and leased ones when they come back (waiting up to 10 s for them), then
    /// runs `afterShutdown`. Leases afterwards fail with ``StoreError/Code/unavailable``.
    func shutdown() async {
        let (idle, waiters) = state.withLock { state in
            guard !state.closed else { return ([Pooled](), [CheckedContinuation<Handover, Never>]()) }
            state.closed = true
            defer {
                state.count -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.resume(returning: .closed) }
        for pooled in idle { try? await pooled.connection.close().get() }
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.count }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        await afterShutdown()
    }

    // MARK: Leasing

    /// Leases a connection for `body` and returns it afterwards (closes it instead when it was closed meanwhile).
    private func lease<R: Sendable>(_ body: @escaping @Sendable (Connection) async throws -> R) async throws -> R {
        let pooled = try await acquire()
        guard pooled.connection.lossySignal != nil else {
            do {
                let result = try await body(pooled.connection)
                await release(pooled)
                return result
            } catch {
                await release(pooled)
                throw error
            }
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            let answer = Answer(continuation)
            let giveUp: @Sendable () -> Bool = {
                guard let waiting = answer.take() else { return false }
                waiting.resume(
                    throwing: StoreError(.unavailable, "the database connection closed and the driver lost a statement")
                )
                return true
            }
            let closedAlready = pooled.watch.withLock { watch in
                if !watch.closed { watch.abandon = giveUp }
                return watch.closed
            }
            if closedAlready {
                _ = giveUp()
                self.gone()
                return
            }
            Task {
                let result: Result<R, any Error>
                do {
                    result = .success(try await body(pooled.connection))
                } catch {
                    result = .failure(error)
                }
                pooled.watch.withLock { $0.abandon = nil }
                guard let waiting = answer.take() else {
                    return  // given up: the connection's place was freed then
                }
                await self.release(pooled)
                waiting.resume(with: result)
            }
        }
    }

    /// A lease's caller, answered once: by its work or by giving up.
    private final class Answer<R: Sendable>: Sendable {
        private let continuation: Mutex<CheckedContinuation<R, any Error>?>
        init(_ continuation: CheckedContinuation<R, any Error>) { self.continuation = Mutex(continuation) }
        func take() -> CheckedContinuation<R, any Error>? { continuation.withLock { $0.take() } }
    }

    /// A lossy connection closed: a lease still working on it `lossGrace` later gives up, and its place is freed.
    private func watchClose(of pooled: Pooled, signal: EventLoopFuture<Void>) {
        let grace = lossGrace
        signal.whenComplete { _ in
            signal.eventLoop.scheduleTask(in: grace) {
                let abandon = pooled.watch.withLock { watch -> (@Sendable () -> Bool)? in
                    watch.closed = true
                    defer { watch.abandon = nil }
                    return watch.abandon
                }
                if let abandon, abandon() {
                    self.logger.warning("gave up a statement the database driver lost when its connection closed")
                    self.gone()
                }
            }
        }
    }

    /// What a lease does next.
    private enum Next {
        case use(Pooled)
        case open
        case wait
        case closed
    }

    private func acquire() async throws -> Pooled {
        while true {
            let next = state.withLock { state -> Next in
                if state.closed { return .closed }
                if let connection = state.idle.popLast() { return .use(connection) }
                if state.count < limit {
                    state.count += 1
                    return .open
                }
                return .wait
            }
            switch next {
            case .use(let pooled):
                if !pooled.connection.isClosed { return pooled }
                gone()
            case .open:
                do {
                    let connection = try await open(logger, MultiThreadedEventLoopGroup.singleton.any()).get()
                    let closed = state.withLock { $0.closed }
                    guard !closed else {
                        try? await connection.close().get()
                        gone()
                        throw StoreError(.unavailable, "the store is shut down")
                    }
                    let pooled = Pooled(connection)
                    if let signal = connection.lossySignal { watchClose(of: pooled, signal: signal) }
                    return pooled
                } catch {
                    gone()
                    throw error
                }
            case .wait:
                let handover = await withCheckedContinuation { (continuation: CheckedContinuation<Handover, Never>) in
                    let immediate = state.withLock { state -> Handover? in
                        if state.closed { return .closed }
                        if let connection = state.idle.popLast() { return .connection(connection) }
                        if state.count < limit { return .retry }
                        state.waiters.append(continuation)
                        return nil
                    }
                    if let immediate { continuation.resume(returning: immediate) }
                }
                switch handover {
                case .connection(let pooled):
                    if !pooled.connection.isClosed { return pooled }
                    gone()
                case .retry:
                    continue
                case .closed:
                    throw StoreError(.unavailable, "the store is shut down")
                }
            case .closed:
                throw StoreError(.unavailable, "the store is shut down")
            }
        }
    }

    /// Hands a connection to the first waiter, or keeps it idle; closes it when the store is shut down or the
    /// connection was closed (a failed rollback).
    private func release(_ pooled: Pooled) async {
        let connection = pooled.connection
        if connection.isClosed {
            gone()
            return
        }
        let (waiter, close) = state.withLock { state -> (CheckedContinuation<Handover, Never>?, Bool) in
            if state.closed { return (nil, true) }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), false) }
            state.idle.append(pooled)
            return (nil, false)
        }
        if close {
            try? await connection.close().get()
            gone()
        } else {
            waiter?.resume(returning: .connection(pooled))
        }
    }

    /// A connection is no more (or never opened): its place is free, and the first waiter may open one.
    private func gone() {
        let waiter = state.withLock { state -> CheckedContinuation<Handover, Never>? in
            state.count -= 1
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume(returning: .retry)
    }
}
