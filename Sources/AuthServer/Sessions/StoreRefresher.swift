import AccountStore
import AppleSignIn
import Logging
import ServiceLifecycle

/// Keeps the revocation list, the signing keys and the user cache current with what other instances (and operator
/// commands) change in the store, until shutdown.
///
/// With a store that announces its changes (PostgreSQL: ``AccountStore/announcements()``), each ending and account
/// change is applied as it arrives, without reading the store: a session ended on another instance is refused here
/// moments after its transaction commits. The poll every `interval` stays, as the fallback for announcements lost
/// with a connection (the store says so with ``StoreAnnouncement/resynchronize``, which reads everything at once).
struct StoreRefresher: Service {
    let store: any AccountStore
    let revocations: RevocationList
    let issuer: AccessTokenIssuer
    let users: UserCache
    let interval: Duration
    let clock: any WallClock
    let logger: Logger

    func run() async throws {
        guard let announcements = store.announcements() else { return await poll() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await poll() }
            group.addTask {
                await cancelWhenGracefulShutdown {
                    for await announcement in announcements { await apply(announcement) }
                }
            }
            // Shutdown ends the poll; the announcements end with it (their connection closes).
            await group.next()
            group.cancelAll()
        }
    }

    /// Reads everything the instance keeps from the store every `interval`.
    private func poll() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await refreshAll()
            // Shutdown ends the wait at once rather than after the interval.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    private func refreshAll() async {
        do {
            try await revocations.refresh(from: store, now: clock.now)
            try await issuer.reload()
            try await users.refresh(from: store, now: clock.now)
        } catch {
            logger.warning("refreshing revocations and keys from the store failed", metadata: ["error": "\(error)"])
        }
    }

    /// One announcement, applied in memory (a key change or a gap reads the store).
    func apply(_ announcement: StoreAnnouncement) async {
        switch announcement {
        case .sessionEnded(let sessionID, let at):
            revocations.add(sessionID, at: at)
        case .accountDeleted(let userID, let at):
            revocations.addDeletedUser(userID, at: at)
            users.invalidate(userID)
        case .accountChanged(let userID):
            users.invalidate(userID)
        case .signingKeysChanged:
            do {
                try await issuer.reload()
            } catch {
                logger.warning("reloading the signing keys failed", metadata: ["error": "\(error)"])
            }
        case .resynchronize:
            await refreshAll()
        }
    }
}
