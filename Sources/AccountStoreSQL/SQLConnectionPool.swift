import AccountStore
@preconcurrency import AsyncKit
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import Synchronization

/// ``SQLConnections`` to one database: up to `limit` connections, opened on demand and kept for reuse, leased under a
/// lock with no thread hop.
///
/// AsyncKit's `EventLoopGroupConnectionPool` (used before) keeps a pool per event loop and works through futures: a
/// lease and a release each hopped to an event loop and back, as many hops as the statements themselves make
/// (SQLiteNIO's thread pool, PostgresNIO's channel), and a request queued behind its own loop's connections while
/// the other loop's were free. Here a lease takes an idle connection under a `Mutex`, or opens one, or waits for the
/// next release in arrival order. On SQLite, writes take turns through ``SQLWriteGate``.
final class SQLConnectionPool<Connection: ConnectionPoolItem & Sendable>: SQLConnections {
    /// Opens a connection on an event loop.
    typealias Opener = @Sendable (Logger, any EventLoop) -> EventLoopFuture<Connection>
    let flavor: SQLFlavor
    private let open: Opener
    private let limit: Int
    private let logger: Logger
    private let makeDatabase: @Sendable (Connection) -> any SQLDatabase
    private let writeGate = SQLWriteGate()
    private let state = Mutex(State())
    private let afterShutdown: @Sendable () async -> Void

    private struct State {
        var idle: [Connection] = []
        /// Connections open or being opened, leased or idle.
        var count = 0
        var waiters: [CheckedContinuation<Handover, Never>] = []
        var closed = false
    }

    /// What a waiting lease is given.
    private enum Handover: Sendable {
        case connection(Connection)
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
    init(
        open: @escaping Opener,
        flavor: SQLFlavor,
        limit: Int,
        logger: Logger,
        makeDatabase: @escaping @Sendable (Connection) -> any SQLDatabase,
        afterShutdown: @escaping @Sendable () async -> Void = {}
    ) {
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
        if flavor == .sqlite { await writeGate.acquire() }
        defer { if flavor == .sqlite { writeGate.release() } }
        return try await lease { connection in
            try await runTransaction(
                on: makeDatabase(connection),
                flavor: flavor,
                lock: lock,
                logger: logger,
                discard: { try? await connection.close().get() },
                body
            )
        }
    }

    func withWriteStatements<R: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R {
        if flavor == .sqlite { await writeGate.acquire() }
        defer { if flavor == .sqlite { writeGate.release() } }
        return try await withConnection(body)
    }

    func withPostgresConnection<R: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await lease { connection in
            guard let postgres = connection as? PostgresConnection else {
                throw StoreError(.invalidInput, "a PostgreSQL statement was sent to \(flavor)")
            }
            return try await body(postgres)
        }
    }

    /// Closes idle connections at once and leased ones when they come back (waiting up to 10 s for them), then
    /// runs `afterShutdown`. Leases afterwards fail with ``StoreError/Code/unavailable``.
    func shutdown() async {
        let (idle, waiters) = state.withLock { state in
            guard !state.closed else { return ([Connection](), [CheckedContinuation<Handover, Never>]()) }
            state.closed = true
            defer {
                state.count -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.resume(returning: .closed) }
        for connection in idle { try? await connection.close().get() }
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.count }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        await afterShutdown()
    }

    // MARK: Leasing

    /// Leases a connection for `body` and returns it afterwards (closes it instead when it was closed meanwhile).
    private func lease<R: Sendable>(_ body: (Connection) async throws -> R) async throws -> R {
        let connection = try await acquire()
        do {
            let result = try await body(connection)
            await release(connection)
            return result
        } catch {
            await release(connection)
            throw error
        }
    }

    /// What a lease does next.
    private enum Next {
        case use(Connection)
        case open
        case wait
        case closed
    }

    private func acquire() async throws -> Connection {
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
            case .use(let connection):
                if !connection.isClosed { return connection }
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
                    return connection
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
                case .connection(let connection):
                    if !connection.isClosed { return connection }
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
    private func release(_ connection: Connection) async {
        if connection.isClosed {
            gone()
            return
        }
        let (waiter, close) = state.withLock { state -> (CheckedContinuation<Handover, Never>?, Bool) in
            if state.closed { return (nil, true) }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), false) }
            state.idle.append(connection)
            return (nil, false)
        }
        if close {
            try? await connection.close().get()
            gone()
        } else {
            waiter?.resume(returning: .connection(connection))
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
