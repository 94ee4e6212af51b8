import AccountStore
import PostgresNIO
import Synchronization
import Testing

@testable import AccountStoreSQL

/// PostgresNIO sends a statement with `channel.write(task, promise: nil)`: one sent on a connection whose channel has
/// closed (PostgreSQL ended the session, as a restart does) and lost its handlers is dropped without failing, and its
/// caller used to wait forever, holding its place in the pool. `Benchmarks/load/pg-restart.sh` saw requests that were
/// never answered, a pool that ran dry and a shutdown that never ended. Now the lease gives up a second after its
/// connection closed and frees its place.
@Suite(
    .enabled(
        if: StoreHarness.postgresURL != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    )
)
struct PostgresConnectionLossTests {
    @Test func aStatementTheDriverLostFailsAndFreesItsPlaceInThePool() async throws {
        let url = try #require(StoreHarness.postgresURL)
        let store = try await SQLAccountStore.postgres(
            url: url,
            schema: StoreHarness.freshSchema(),
            maximumConnections: 2,
            logger: StoreHarness.quietLogger
        )
        let pool = try #require(store.connections as? SQLConnectionPool<PostgresConnection>)
        // One more lost statement than the pool has places: without giving up, the last one could not even lease.
        for round in 0...pool.limit {
            let outcome = await Self.answer(within: .seconds(60)) {
                try await store.postgres("send a statement after the session ended") { connection, logger in
                    _ = try? await connection.query("SELECT pg_terminate_backend(pg_backend_pid())", logger: logger)
                    while !connection.isClosed { try await Task.sleep(for: .milliseconds(5)) }
                    // Two turns of the connection's event loop: the second runs after NIO removed the handlers, which
                    // it schedules while closing.
                    try await connection.eventLoop.submit {}.get()
                    try await connection.eventLoop.submit {}.get()
                    return try await connection.query("SELECT 1", logger: logger).collect().count
                }
            }
            switch outcome {
            case nil:
                Issue.record("round \(round): the statement sent after the session ended was never answered")
                return
            case .success(let rows):
                Issue.record("round \(round): a statement on a closed connection returned \(rows) rows")
            case .failure(let error):
                #expect((error as? StoreError)?.code == .unavailable, "round \(round): \(error)")
            }
        }
        let answered = await Self.answer(within: .seconds(60)) { try await store.ping() }
        #expect(answered != nil, "the pool still leases after every place held a lost statement")
        if case .failure(let error) = answered { Issue.record("ping after the losses: \(error)") }
        await store.shutdown()
    }

    /// `work`'s result, or `nil` when it has not answered within `limit` (then it is left running: a statement the
    /// driver lost never ends, and a task group would wait for it).
    private static func answer<T: Sendable>(
        within limit: Duration,
        _ work: @escaping @Sendable () async throws -> T
    ) async -> Result<T, any Error>? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>?, Never>) in
            let once = Once(continuation)
            let finish: @Sendable (Result<T, any Error>?) -> Void = { result in once.take()?.resume(returning: result) }
            Task {
                do { finish(.success(try await work())) } catch { finish(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: limit)
                finish(nil)
            }
        }
    }
}

/// A continuation resumed once, by whichever of two tasks comes first.
private final class Once<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>
    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = Mutex(continuation) }
    func take() -> CheckedContinuation<T, Never>? { continuation.withLock { $0.take() } }
}
