/// Coalesces concurrent calls per key: the first caller runs the work, callers arriving while it runs wait for its
/// result instead of running it again. Nothing is cached once the work has finished.
actor SingleFlight<Key: Hashable & Sendable, Value: Sendable> {
    private var waiting: [Key: [CheckedContinuation<Value, Never>]] = [:]

    /// Runs `work` for `key` unless a run for `key` is under way, whose result is then returned.
    func run(_ key: Key, _ work: @Sendable () async -> Value) async -> Value {
        if waiting[key] != nil {
            return await withCheckedContinuation { continuation in
                waiting[key, default: []].append(continuation)
            }
        }
        waiting[key] = []
        let value = await work()
        for continuation in waiting.removeValue(forKey: key) ?? [] { continuation.resume(returning: value) }
        return value
    }
}
