import Synchronization

/// One SQLite write transaction at a time in this process, in arrival order.
///
/// SQLite allows one writer per database file. Without this gate, concurrent `BEGIN IMMEDIATE`s on the pool's
/// connections collide and SQLite's busy handler sleeps between retries (1, 2, 5, 10 … 100 ms), which under load turns
/// every write into a wait of tens of milliseconds. Queuing writers here hands the lock over without sleeping; the
/// busy timeout still covers other processes on the same file.
final class SQLWriteGate: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Waits until this caller holds the gate.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                if !state.locked {
                    state.locked = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    /// Hands the gate to the next waiter, or opens it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.locked = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
