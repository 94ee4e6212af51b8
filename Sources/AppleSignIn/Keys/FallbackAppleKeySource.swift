public import Logging
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Apple's key endpoint, with a configured key set to fall back on while it cannot be reached.
///
/// While the endpoint answers, only its keys count. When a fetch fails (at start or later), the answer is the
/// configured set together with the keys the endpoint last gave (those win on a shared `kid`, and are kept so that a
/// configured set older than Apple's loses no key the cache already held), kept for ``retryInterval`` so that the
/// cache asks Apple again soon.
public final class FallbackAppleKeySource: AppleKeySource {
    /// The keys used while the endpoint cannot be reached.
    public let fallback: AppleKeySet
    /// How long a fallback answer is kept before the endpoint is asked again.
    public let retryInterval: TimeInterval

    private let primary: any AppleKeySource
    private let logger: Logger
    private let lastFetched = Mutex<AppleKeySet?>(nil)

    /// - Parameters:
    ///   - primary: Apple's key endpoint (``AppleKeysEndpoint``).
    ///   - fallback: the configured key set.
    ///   - retryInterval: seconds a fallback answer is cached (default 300; the cache's refetch interval at least).
    ///   - logger: a warning when the fallback is used; never token contents.
    public init(
        primary: any AppleKeySource,
        fallback: AppleKeySet,
        retryInterval: TimeInterval = 300,
        logger: Logger = Logger(label: "siwa.apple-keys")
    ) {
        self.primary = primary
        self.fallback = fallback
        self.retryInterval = retryInterval
        self.logger = logger
    }

    /// Asks the endpoint, and answers the configured set (with the keys last fetched) when it fails.
    /// - Returns: the endpoint's answer; after a failure, the merged set with ``retryInterval`` as its `max-age`.
    /// - Throws: the endpoint's ``AppleSignInError`` only when the task was cancelled; any other failure is answered
    ///   with the fallback.
    public func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
        do {
            let fetched = try await primary.fetchKeySet()
            lastFetched.withLock { $0 = fetched.keySet }
            return fetched
        } catch {
            // A cancelled fetch is the caller giving up, not Apple being unreachable.
            if Task.isCancelled { throw error }
            var keys = fallback.keys
            if let held = lastFetched.withLock({ $0 }) {
                keys.merge(held.keys) { _, apple in apple }
            }
            logger.warning(
                "Apple's key endpoint failed; using the configured key set",
                metadata: ["error": "\(error)", "kids": "\(keys.keys.sorted())"]
            )
            return (AppleKeySet(keys: Array(keys.values)), retryInterval)
        }
    }
}
