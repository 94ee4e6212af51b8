import Synchronization

/// Token buckets in this process's memory: the limits of one process (SQLite, tests).
final class InMemoryRateLimitBuckets: RateLimitBuckets {
    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
    }

    let limit: AuthServerConfiguration.RateLimit
    private let state = Mutex<[String: Bucket]>([:])

    init(limit: AuthServerConfiguration.RateLimit) {
        self.limit = limit
    }

    func take(_ key: String, now: ContinuousClock.Instant) -> Double? {
        state.withLock { buckets -> Double? in
            if buckets.count > 100_000 { buckets.removeAll() }  // bounded memory under address floods
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updatedAt: now)
            defer { buckets[key] = bucket }
            return limit.take(&bucket.tokens, updatedAt: &bucket.updatedAt, now: now)
        }
    }
}
