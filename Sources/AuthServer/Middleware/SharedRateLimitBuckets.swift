import AccountStore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Token buckets that every instance sharing the store spends from together, without a database write per request.
///
/// Each request is decided here, in memory, as ``InMemoryRateLimitBuckets`` decides it. What this instance spends is
/// sent to the deployment's counts in batches (``batch(window:expiresAt:now:)``, by ``SharedLimits`` every few hundred
/// milliseconds), and each batch brings back the deployment's totals, from which what the other instances spent since
/// the last batch is taken from the local bucket (``apply(_:)``), below zero if need be: a debt that the refill pays
/// back, so that over any period longer than a batch the deployment admits what one bucket would. Between two batches
/// each instance decides alone; a client whose requests all arrive within one interval can get up to the other
/// instances' local tokens more, and then waits for them.
///
/// A bucket that is not full, or has spent since the last batch, is in every batch (with 0 when it has spent
/// nothing), so that it hears the others' spending before its next request; a full bucket at rest is not.
final class SharedRateLimitBuckets: RateLimitBuckets {
    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
        /// Spent here since the last batch.
        var pending: Int64 = 0
        /// Spent here and in the batch on its way.
        var sending: Int64 = 0
        /// The window `seen` counts in.
        var window: Int64 = -1
        /// The deployment's count in `window` when the last batch answered.
        var seen: Int64 = 0
    }

    /// The prefix of this set's keys in the shared counts (`client`, `flow`, `notification`).
    let name: String
    let limit: AuthServerConfiguration.RateLimit
    private let state = Mutex<[String: Bucket]>([:])
    private static let maximumTracked = 100_000

    init(name: String, limit: AuthServerConfiguration.RateLimit) {
        self.name = name
        self.limit = limit
    }

    func take(_ key: String, now: ContinuousClock.Instant) -> Double? {
        state.withLock { buckets -> Double? in
            if buckets.count > Self.maximumTracked { buckets.removeAll() }  // bounded memory under address floods
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updatedAt: now)
            defer { buckets[key] = bucket }
            let wait = limit.take(&bucket.tokens, updatedAt: &bucket.updatedAt, now: now)
            if wait == nil { bucket.pending += 1 }
            return wait
        }
    }

    /// What to send in the next batch: one count per bucket that has spent since the last batch or is not full, in
    /// `window`. Full buckets at rest from an earlier window are forgotten.
    /// - Parameters:
    ///   - window: The current window's start (milliseconds).
    ///   - expiresAt: When the window's counts may be purged.
    ///   - now: The current instant (for the refill).
    func batch(window: Int64, expiresAt: Date, now: ContinuousClock.Instant) -> [SharedCount] {
        state.withLock { buckets in
            var counts: [SharedCount] = []
            for (key, var bucket) in buckets {
                let tokens = limit.refilled(bucket.tokens, from: bucket.updatedAt, to: now)
                let atRest = bucket.pending == 0 && bucket.sending == 0 && tokens >= limit.burst
                if atRest {
                    if bucket.window != window { buckets[key] = nil }
                    continue
                }
                if bucket.window != window {
                    bucket.window = window
                    bucket.seen = 0
                }
                bucket.sending += bucket.pending
                bucket.pending = 0
                buckets[key] = bucket
                counts.append(
                    SharedCount(key: name + ":" + key, window: window, count: bucket.sending, expiresAt: expiresAt)
                )
            }
            return counts
        }
    }

    /// Takes what the other instances spent from each bucket, given the deployment's totals that answered a batch.
    /// - Parameter totals: The totals by key (without this set's prefix) and window.
    func apply(_ totals: [String: (window: Int64, count: Int64)]) {
        state.withLock { buckets in
            for (key, total) in totals {
                guard var bucket = buckets[key], bucket.window == total.window else { continue }
                let others = total.count - bucket.seen - bucket.sending
                if others > 0 { bucket.tokens -= Double(others) }
                bucket.seen = total.count
                bucket.sending = 0
                buckets[key] = bucket
            }
        }
    }

    /// The batch was not answered: what it carried is sent with the next one.
    func batchFailed() {
        state.withLock { buckets in
            for (key, var bucket) in buckets where bucket.sending > 0 {
                bucket.pending += bucket.sending
                bucket.sending = 0
                buckets[key] = bucket
            }
        }
    }
}
