/// How calls that are safe to repeat (key-set fetch, refresh-token validation, revocation) are retried when Apple is
/// unreachable or answers 5xx/429. Code exchange is never retried: a code is single-use.
public struct RetryPolicy: Sendable {
    /// Attempts in all, including the first.
    public var maximumAttempts: Int
    /// The delay before the second attempt; each later delay doubles it.
    public var initialDelay: Duration
    /// How long one attempt may take.
    public var timeout: Duration

    /// Makes a policy.
    /// - Parameters:
    ///   - maximumAttempts: attempts in all, including the first; values below 1 count as 1.
    ///   - initialDelay: the delay before the second attempt.
    ///   - timeout: how long one attempt may take.
    public init(maximumAttempts: Int = 3, initialDelay: Duration = .milliseconds(200), timeout: Duration = .seconds(10))
    {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.timeout = timeout
    }

    /// No retries (tests of single calls, and code exchange).
    public static let once = RetryPolicy(maximumAttempts: 1, initialDelay: .zero)

    func delay(beforeAttempt attempt: Int) -> Duration {
        initialDelay * (1 << max(0, attempt - 2))
    }
}
