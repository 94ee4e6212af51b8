public import AccountStore
public import AppleSignIn
public import Logging
public import ServiceLifecycle
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes the limits of one instance hold for every instance that shares its store (PostgreSQL): the per-client rate
/// limits, the web-flow budget and Apple's notification budget (``SharedRateLimitBuckets``, reconciled in batches).
/// The sessions one identity token may open are counted by the store in each sign-in's own write
/// (``NewSession/bound``).
///
/// Every `interval` it sends what this instance spent since the last batch to the store's ``SharedCounters`` in one
/// statement, and takes what the other instances spent from its local buckets: no request waits for the database.
///
/// When the database does not answer, the instance goes on enforcing its own buckets and counts (the limits of one
/// process: with N instances a client can get up to N times the limits, never unlimited, and nobody is refused for
/// the outage), logs one warning, sets `siwa_shared_limits_local` to 1 and counts the failures; when a batch is
/// answered again it logs one notice, and what it spent meanwhile is sent with that batch.
///
/// ``buildApplication(configuration:apple:store:transport:sealer:sharedLimits:clock:host:port:logger:tls:tracer:onServerRunning:)``
/// makes one from ``AccountStore/sharedCounters()`` when the store has them; one application uses one.
public final class SharedLimits: Service, Sendable {
    let counters: any SharedCounters
    let interval: Duration
    let clock: any WallClock
    let logger: Logger
    /// The length of a counting window: counts of older windows are no longer read, and housekeeping purges them.
    static let window: Int64 = 300_000

    private struct State {
        var sets: [SharedRateLimitBuckets] = []
        var local = false
        var metrics: ServerMetrics?
    }

    private let state = Mutex(State())
    /// One batch at a time: a second waits for the first (the buckets track one batch on its way).
    private let gate = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// - Parameters:
    ///   - counters: The store's shared counts (``AccountStore/sharedCounters()``).
    ///   - interval: How often the buckets are reconciled with the deployment's counts.
    ///   - clock: The wall clock the counting windows follow.
    ///   - logger: Says when the database stops and starts answering again (never a key).
    public init(
        counters: any SharedCounters,
        interval: Duration = .milliseconds(200),
        clock: any WallClock = SystemWallClock(),
        logger: Logger
    ) {
        self.counters = counters
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// Whether the last exchange with the database failed and the instance enforces its own limits.
    public var isLocal: Bool { state.withLock { $0.local } }

    /// A set of buckets reconciled with every instance's, its keys prefixed with `name`.
    func buckets(_ name: String, limit: AuthServerConfiguration.RateLimit) -> SharedRateLimitBuckets {
        let buckets = SharedRateLimitBuckets(name: name, limit: limit)
        state.withLock { $0.sets.append(buckets) }
        return buckets
    }

    /// Reports to `metrics` from now on.
    func report(to metrics: ServerMetrics?) {
        let local = state.withLock { state in
            state.metrics = metrics
            return state.local
        }
        metrics?.sharedLimits(local: local)
    }

    /// Sends what this instance spent since the last batch and applies what the others spent, now.
    /// - Returns: Whether the database answered.
    @discardableResult
    public func reconcile() async -> Bool {
        await enter()
        defer { leave() }
        let sets = state.withLock { $0.sets }
        let nowMilliseconds = Int64((clock.now.timeIntervalSince1970 * 1000).rounded(.down))
        let window = nowMilliseconds - nowMilliseconds % Self.window
        let expiresAt = Date(timeIntervalSince1970: Double(window + 2 * Self.window) / 1000)
        let instant = ContinuousClock.now
        let batches = sets.map { $0.batch(window: window, expiresAt: expiresAt, now: instant) }
        guard batches.contains(where: { !$0.isEmpty }) else { return !isLocal }
        do {
            let totals = try await counters.add(batches.flatMap { $0 })
            var bySet: [String: [String: (window: Int64, count: Int64)]] = [:]
            for total in totals {
                guard let separator = total.key.firstIndex(of: ":") else { continue }
                let name = String(total.key[..<separator])
                let key = String(total.key[total.key.index(after: separator)...])
                bySet[name, default: [:]][key] = (total.window, total.count)
            }
            for set in sets { set.apply(bySet[set.name] ?? [:]) }
            answered()
            return true
        } catch {
            for set in sets { set.batchFailed() }
            failed(error)
            return false
        }
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
            guard !Task.isCancelled && !Task.isShuttingDownGracefully else { return }
            await reconcile()
        }
    }

    private func answered() {
        let (wasLocal, metrics) = state.withLock { state in
            defer { state.local = false }
            return (state.local, state.metrics)
        }
        guard wasLocal else { return }
        metrics?.sharedLimits(local: false)
        logger.notice("the database answers the shared limits again: they hold for the whole deployment")
    }

    private func failed(_ error: any Error) {
        let (wasLocal, metrics) = state.withLock { state in
            defer { state.local = true }
            return (state.local, state.metrics)
        }
        metrics?.sharedLimitsFailed()
        guard !wasLocal else { return }
        metrics?.sharedLimits(local: true)
        logger.warning(
            "the database does not answer the shared limits: this instance enforces its own until it does",
            metadata: ["error": "\(error)"]
        )
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let runs = gate.withLock { gate in
                guard gate.busy else {
                    gate.busy = true
                    return true
                }
                gate.waiting.append(continuation)
                return false
            }
            if runs { continuation.resume() }
        }
    }

    private func leave() {
        let next = gate.withLock { gate -> CheckedContinuation<Void, Never>? in
            guard !gate.waiting.isEmpty else {
                gate.busy = false
                return nil
            }
            return gate.waiting.removeFirst()
        }
        next?.resume()
    }
}
