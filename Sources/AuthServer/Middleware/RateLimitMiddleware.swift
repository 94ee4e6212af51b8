import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A token bucket per client IP. Over the limit: 429 with `Retry-After`.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
    }

    /// The buckets, shared by every copy of the middleware.
    private final class Buckets: Sendable {
        let state = Mutex<[String: Bucket]>([:])
    }

    let limit: AuthServerConfiguration.RateLimit
    private let buckets = Buckets()
    private let clock = ContinuousClock()

    init(limit: AuthServerConfiguration.RateLimit) {
        self.limit = limit
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let client = context.remoteAddress?.ipAddress ?? "unknown"
        let now = clock.now
        let waitSeconds = buckets.state.withLock { buckets -> Double? in
            if buckets.count > 100_000 { buckets.removeAll() }  // bounded memory under address floods
            var bucket = buckets[client] ?? Bucket(tokens: limit.burst, updatedAt: now)
            let elapsed = now - bucket.updatedAt
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(limit.burst, bucket.tokens + seconds * limit.requestsPerSecond)
            bucket.updatedAt = now
            defer { buckets[client] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return (1 - bucket.tokens) / limit.requestsPerSecond
        }
        if let waitSeconds {
            throw AuthServerError(
                .tooManyRequests,
                "rate_limited",
                "too many requests from this address; retry later",
                headers: [.retryAfter: String(max(1, Int(waitSeconds.rounded(.up))))]
            )
        }
        return try await next(request, context)
    }
}
