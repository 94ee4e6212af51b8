import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import Logging
import ServiceLifecycle
import SiwaTesting
import Testing

@Suite("Server: housekeeping")
struct HousekeepingTests {
    @Test func theServicePurgesExpiredRowsEveryInterval() async throws {
        let store = InMemoryAccountStore()
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let user = try await store.signIn(
            AppleSignInFacts(appleUserID: AppleUserID("001.abc.1"), clientID: ClientID("com.example.app")),
            now: clock.now
        ).user
        let revoked = RefreshTokenRecord(
            hash: Array(repeating: 1, count: 32),
            sessionID: SessionID(),
            userID: user.id,
            issuedAt: clock.now,
            expiresAt: clock.now.addingTimeInterval(86_400)
        )
        try await store.createSession(firstToken: revoked, now: clock.now)
        _ = try await store.revokeSession(revoked.sessionID, now: clock.now)
        try await store.saveServerNonce(
            hash: Array(repeating: 2, count: 32),
            expiresAt: clock.now.addingTimeInterval(60)
        )
        clock.advance(by: 8 * 86_400)

        let housekeeping = Housekeeping(
            store: store,
            configuration: HousekeepingConfiguration(purgeInterval: .milliseconds(50), retention: 7 * 86_400),
            clock: clock,
            logger: Logger(label: "test")
        )
        let group = ServiceGroup(services: [housekeeping], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var remaining = await store.checkRefreshToken(presentedHash: revoked.hash, now: clock.now)
            for _ in 0..<100 where remaining != .notFound {
                try await Task.sleep(for: .milliseconds(20))
                remaining = await store.checkRefreshToken(presentedHash: revoked.hash, now: clock.now)
            }
            #expect(remaining == .notFound, "the revoked session's token was purged by the running service")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let again = try await housekeeping.purge()
        #expect(again.total == 0, "everything expired is already gone")
        #expect(await store.user(id: user.id) != nil, "accounts are never purged")
    }

    /// Each purge deletes the audit events older than the retention and keeps the newer ones.
    @Test func aPurgeDeletesAuditEventsPastTheRetention() async throws {
        let store = InMemoryAccountStore()
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let old = AuditEvent(time: clock.now.addingTimeInterval(-31 * 86_400), type: .accountDisabled, actor: .operator)
        let recent = AuditEvent(
            time: clock.now.addingTimeInterval(-29 * 86_400),
            type: .accountEnabled,
            actor: .operator
        )
        try await store.appendAuditEvent(old)
        try await store.appendAuditEvent(recent)
        let housekeeping = Housekeeping(
            store: store,
            configuration: HousekeepingConfiguration(purgeInterval: nil, auditRetention: 30 * 86_400),
            clock: clock,
            logger: Logger(label: "test")
        )
        try await housekeeping.purge()
        let kept = try await store.auditEvents(AuditEventFilter(), limit: 10, after: nil).items
        #expect(kept.map(\.id) == [recent.id])
    }
}
