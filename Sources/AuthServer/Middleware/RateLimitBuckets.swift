/// A set of token buckets, one per client (``ClientKey``), that ``RateLimiter`` spends from: in memory for
/// one process (``InMemoryRateLimitBuckets``), or counted with every instance that shares the store
/// (``SharedRateLimitBuckets``).
protocol RateLimitBuckets: Sendable {
    /// The limit every bucket of the set has.
    var limit: AuthServerConfiguration.RateLimit { get }

    /// Takes a token from `key`'s bucket.
    /// - Parameters:
    ///   - key: The client's key.
    ///   - now: The current instant.
    /// - Returns: `nil` when a token was taken, else the seconds to wait for one.
    func take(_ key: String, now: ContinuousClock.Instant) -> Double?
}

extension AuthServerConfiguration.RateLimit {
    /// `tokens` refilled from `from` to `now`, up to the burst.
    func refilled(_ tokens: Double, from: ContinuousClock.Instant, to now: ContinuousClock.Instant) -> Double {
        let elapsed = now - from
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(burst, tokens + seconds * requestsPerSecond)
    }

    /// Takes a token from a bucket that held `tokens` at `updatedAt`, refilled to `now` first.
    /// - Returns: `nil` when a token was taken, else the seconds until the bucket has one.
    func take(
        _ tokens: inout Double,
        updatedAt: inout ContinuousClock.Instant,
        now: ContinuousClock.Instant
    ) -> Double? {
        tokens = refilled(tokens, from: updatedAt, to: now)
        updatedAt = now
        guard tokens >= 1 else { return (1 - tokens) / requestsPerSecond }
        tokens -= 1
        return nil
    }
}
