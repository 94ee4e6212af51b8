import Crypto
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Bounds the sessions one identity token can open while it is valid, so that replaying a captured token does not
/// create sessions without end (each kept for weeks).
///
/// A client that retries a sign-in whose answer it lost presents the same token again, so a few uses are allowed;
/// past ``limit`` the sign-in is refused. Counted in this process by the token's SHA-256, for a store that one process
/// uses (SQLite, in memory); a store shared by several instances counts it in the sign-in's own write instead
/// (``NewSession/bound``), so that the bound holds for the deployment. Entries go when the token expires; the table
/// is bounded.
final class IdentityTokenReplayGuard: Sendable {
    let limit: Int
    private let state = Mutex<[[UInt8]: (count: Int, expiresAt: Date)]>([:])
    private static let maximumTracked = 200_000

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts one sign-in with `token`; `false` when it has opened ``limit`` sessions already.
    func admit(_ token: String, expiresAt: Date, now: Date) -> Bool {
        guard limit > 0 else { return true }
        let key = Array(SHA256.hash(data: Array(token.utf8)))
        return state.withLock { table in
            if table.count >= Self.maximumTracked {
                table = table.filter { $0.value.expiresAt > now }
                if table.count >= Self.maximumTracked { table.removeAll() }
            }
            let entry = table[key] ?? (0, expiresAt)
            guard entry.count < limit else { return false }
            table[key] = (entry.count + 1, expiresAt)
            return true
        }
    }

    /// Gives back what ``admit(_:expiresAt:now:)`` counted for a sign-in that opened no session (the store could not
    /// be reached), so that a client that retries after a 503 is not refused as a replay.
    func release(_ token: String) {
        guard limit > 0 else { return }
        let key = Array(SHA256.hash(data: Array(token.utf8)))
        state.withLock { table in
            guard let entry = table[key] else { return }
            table[key] = entry.count > 1 ? (entry.count - 1, entry.expiresAt) : nil
        }
    }
}
