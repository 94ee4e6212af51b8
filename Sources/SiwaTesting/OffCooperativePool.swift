import Foundation

/// Runs blocking work (waiting for a subprocess, reading its pipes) on a thread of its own and awaits the result, so
/// that it does not hold one of the few threads of Swift's cooperative pool (two on a 2-core machine): blocking them
/// stalls every other test's tasks, and database pools then time out.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}
