public import Logging
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Apple's signing keys, cached, refreshed when they age out or when a token names an unknown `kid`.
///
/// - A known `kid` is answered from memory behind a lock: no actor hop, no suspension, no allocation.
/// - The set is kept for `Cache-Control: max-age` (default 24 h). When it has aged out, the next lookup refetches;
///   while that fetch runs, keys already held keep serving.
/// - An unknown `kid` triggers one refetch, shared by every lookup waiting on it (single flight), and at most one
///   refetch per ``minimumRefetchInterval`` whatever tokens arrive, so a flood of made-up `kid`s cannot storm Apple.
/// - If a refetch fails, the keys already held keep serving.
public final class AppleKeyCache: Sendable {
    private struct State {
        var keys: [String: AppleSigningKey] = [:]
        var expiresAt: Date?
        var lastAttempt: Date?
        var lastFailure: String?
        var fetching = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var fetchCount = 0

        /// The key named `kid` while the set has not aged out (`now` before its expiry).
        func freshKey(_ kid: String, now: Date) -> AppleSigningKey? {
            guard let key = keys[kid], let expiresAt, now < expiresAt else { return nil }
            return key
        }
    }

    private enum Step {
        case found(AppleSigningKey)
        case fail(AppleSignInError)
        case wait
        case fetch
    }

    /// The shortest time between two fetches of the key set.
    public let minimumRefetchInterval: TimeInterval
    /// How long a fetched set is kept when Apple sends no `max-age`.
    public let defaultMaxAge: TimeInterval
    /// While no key is held at all, fetches are retried this often instead.
    public let emptyRetryInterval: TimeInterval

    private let source: any AppleKeySource
    private let clock: any WallClock
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - source: where the keys come from (Apple's `/auth/keys`, or a fixed set).
    ///   - clock: wall clock for cache ages.
    ///   - minimumRefetchInterval: at most one fetch per this many seconds (default 60).
    ///   - defaultMaxAge: cache lifetime without `max-age` (default 24 h).
    ///   - emptyRetryInterval: retry spacing while no keys are held (default 5 s).
    ///   - logger: debug-level events (fetches, failures); never token contents.
    public init(
        source: any AppleKeySource,
        clock: any WallClock = SystemWallClock(),
        minimumRefetchInterval: TimeInterval = 60,
        defaultMaxAge: TimeInterval = 86_400,
        emptyRetryInterval: TimeInterval = 5,
        logger: Logger = Logger(label: "siwa.apple-keys")
    ) {
        self.source = source
        self.clock = clock
        self.minimumRefetchInterval = minimumRefetchInterval
        self.defaultMaxAge = defaultMaxAge
        self.emptyRetryInterval = min(emptyRetryInterval, minimumRefetchInterval)
        self.logger = logger
    }

    /// How many times the key set has been fetched (successfully or not).
    public var fetchCount: Int { state.withLock { $0.fetchCount } }

    /// The key ids currently held.
    public var keyIDs: Set<String> { state.withLock { Set($0.keys.keys) } }

    /// The key named `kid`.
    ///
    /// A fresh key is answered from memory; otherwise this lookup leads at most one fetch (or waits for the one
    /// running), and a stale key is served while fetching is not allowed or fails.
    /// - Parameter kid: the `kid` of the token's header.
    /// - Returns: the key with that id.
    /// - Throws: ``AppleSignInError/Code/unknownKey`` when the set (refetched if allowed) has no such key,
    ///   ``AppleSignInError/Code/keysUnavailable`` when no key set could be fetched at all,
    ///   ``AppleSignInError/Code/timeout`` when the task is cancelled during the fetch it leads.
    public func key(for kid: String) async throws(AppleSignInError) -> AppleSigningKey {
        // One lookup leads at most one fetch: after it, the key is there or the lookup fails, whatever the
        // refetch interval (a zero interval must not turn a failing Apple into a busy loop).
        var fetched = false
        while true {
            switch nextStep(for: kid, mayFetch: !fetched) {
            case .found(let key):
                return key
            case .fail(let error):
                throw error
            case .wait:
                await waitForFetch()
            case .fetch:
                fetched = true
                try await fetch(reason: kid)
            }
        }
    }

    /// The key named `kid` when the cache holds it and the set has not aged out; nil when ``key(for:)`` has to decide
    /// (fetch, wait, serve a stale key or fail). The path of nearly every token, without an async call.
    package func freshKey(for kid: String) -> AppleSigningKey? {
        state.withLock { state in state.freshKey(kid, now: clock.now) }
    }

    private func isRateLimited(_ state: State, now: Date) -> Bool {
        guard let last = state.lastAttempt else { return false }
        let interval = state.keys.isEmpty ? emptyRetryInterval : minimumRefetchInterval
        return now.timeIntervalSince(last) < interval
    }

    private func nextStep(for kid: String, mayFetch: Bool) -> Step {
        state.withLock { state in
            let now = clock.now
            if let key = state.freshKey(kid, now: now) { return .found(key) }
            let key = state.keys[kid]
            if state.fetching {
                // Serve a stale known key rather than wait; wait only for a key we do not have.
                if let key { return .found(key) }
                return .wait
            }
            if !mayFetch || isRateLimited(state, now: now) {
                if let key { return .found(key) }
                if state.keys.isEmpty {
                    return .fail(
                        AppleSignInError(
                            .keysUnavailable,
                            "Apple's key set could not be fetched (\(state.lastFailure ?? "no answer")); retrying soon"
                        )
                    )
                }
                return .fail(
                    AppleSignInError(
                        .unknownKey,
                        "no key with kid \(LoggedText.quoted(kid, limit: 64)) in Apple's key set"
                    )
                )
            }
            state.fetching = true
            return .fetch
        }
    }

    private func waitForFetch() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                guard state.fetching else { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Runs one fetch; the caller has set `fetching`. Errors other than cancellation are recorded, not thrown: the
    /// caller's next step decides from the state (stale key, unknown key, or keys unavailable).
    private func fetch(reason kid: String?) async throws(AppleSignInError) {
        logger.debug("fetching Apple's key set", metadata: kid.map { ["kid": "\($0.prefix(64))"] } ?? [:])
        let result: Result<(keySet: AppleKeySet, maxAge: TimeInterval?), AppleSignInError>
        do {
            result = .success(try await source.fetchKeySet())
        } catch {
            result = .failure(error)
        }
        let cancelled = Task.isCancelled
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let now = clock.now
            state.fetching = false
            state.fetchCount += 1
            switch result {
            case .success(let fetched):
                let maxAge = min(max(fetched.maxAge ?? defaultMaxAge, minimumRefetchInterval), 7 * 86_400)
                state.keys = fetched.keySet.keys
                state.expiresAt = now.addingTimeInterval(maxAge)
                state.lastAttempt = now
                state.lastFailure = nil
            case .failure(let error):
                if !cancelled {
                    state.lastAttempt = now
                    state.lastFailure = error.description
                }
            }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        switch result {
        case .success(let fetched):
            logger.debug("fetched Apple's key set", metadata: ["kids": "\(fetched.keySet.keys.keys.sorted())"])
        case .failure(let error):
            logger.warning("fetching Apple's key set failed", metadata: ["error": "\(error)"])
            if cancelled { throw AppleSignInError(.timeout, "cancelled while fetching Apple's key set") }
        }
    }
}
