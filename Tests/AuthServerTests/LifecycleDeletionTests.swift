import AccountStore
import AccountStoreSQL
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Synchronization
import Testing

/// `DELETE /api/me`: the account goes and its Apple token is revoked at Apple, at once or by the retry worker.
@Suite("Lifecycle: account deletion")
struct LifecycleDeletionTests {
    @Test func deleteMeRevokesTheAppleTokenAndDeletesTheAccount() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("delete@example.com")
                let other = try await server.signIn("delete@example.com")
                let access = try #require(signIn.json.string("accessToken"))
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                #expect(try await lifecycle.store.appleToken(userID: userID) != nil)

                let deleted = try await server.call(.delete, "/api/me", bearer: access)
                #expect(deleted.status == .noContent)
                #expect(try await lifecycle.emulatorCalls("revoke", outcome: "200") == 1)
                #expect(try await lifecycle.store.user(id: userID) == nil)
                #expect(try await pending(lifecycle).isEmpty)
                for session in [signIn, other] {
                    let me = try await server.call(.get, "/api/me", bearer: session.json.string("accessToken"))
                    #expect(me.status == .unauthorized)
                    let refresh = try await server.call(
                        .post,
                        "/auth/refresh",
                        json: ["refreshToken": try #require(session.json.string("refreshToken"))]
                    )
                    #expect(refresh.status == .unauthorized)
                }
                #expect(try await server.call(.delete, "/api/me").json.string("error") == "missing_token")
            }
        }
    }

    @Test func aDeletionReachesAnotherInstanceWithinTheRefreshInterval() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { first in
                try await lifecycle.withServer { second in
                    let here = try await first.signIn("twoplaces@example.com")
                    let there = try await second.signIn("twoplaces@example.com")
                    let thereAccess = try #require(there.json.string("accessToken"))
                    #expect(try await second.call(.get, "/api/me", bearer: thereAccess).status == .ok)
                    let deleted = try await first.call(.delete, "/api/me", bearer: here.json.string("accessToken"))
                    #expect(deleted.status == .noContent)
                    let refused = try await lifecycle.eventually(within: 3) {
                        try await second.call(.get, "/api/me", bearer: thereAccess).json.string("error")
                            == "account_deleted"
                    }
                    #expect(refused)
                }
            }
        }
    }

    @Test func aRevocationThatFailsIsQueuedAndRetriedAfterARestart() async throws {
        try await queuedRevocationSurvivesARestart(store: InMemoryAccountStore())
    }

    @Test func aRevocationThatFailsIsQueuedAndRetriedAfterARestartOnSQLite() async throws {
        try await SQLStoreServerTests.withStore(.sqlite, name: "siwa-lifecycle") { store in
            try await queuedRevocationSurvivesARestart(store: store)
        }
    }

    @Test func theWorkerRetriesOnceTheFaultEnds() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("retry@example.com")
                try await server.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "error"])
                let deleted = try await server.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
                #expect(deleted.status == .noContent)
                let queued = try #require(try await pending(lifecycle).first)
                #expect(queued.attempts == 1)
                #expect(queued.nextAttemptAt > lifecycle.clock.now)  // backoff: not retried at once

                try await server.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "off"])
                lifecycle.clock.advance(by: 31)
                try await nextAttempt(lifecycle, after: 1)
                #expect(try await lifecycle.emulatorCalls("revoke", outcome: "200") == 1)
                #expect(try await pending(lifecycle).isEmpty)
            }
        }
    }

    /// Apple answers 200 to any revocation, one that revoked nothing included (the emulator's `ignore` fault plays
    /// it): siwa checks with the token itself, keeps the revocation queued while the token still refreshes, and
    /// records it confirmed only once a refresh grant with it fails.
    @Test func aRevocationThatDidNotTakeStaysQueuedUntilConfirmed() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("ignored@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                try await server.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "ignore", "count": 1])
                let deleted = try await server.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
                #expect(deleted.status == .noContent)
                let queued = try #require(try await pending(lifecycle).first)
                #expect(queued.userID == userID)
                #expect(queued.lastError?.contains("still refreshes") == true, "\(queued.lastError ?? "")")
                let unconfirmed = try await events(lifecycle.store, .appleRevocationQueued)
                #expect(unconfirmed.map(\.reason) == ["revocation_unconfirmed"])
                #expect(try await events(lifecycle.store, .appleRevocationConfirmed).isEmpty)

                // The fault is spent: the next attempt revokes, and the refresh grant that follows proves it.
                lifecycle.clock.advance(by: 31)
                try await nextAttempt(lifecycle, after: 1)
                #expect(try await pending(lifecycle).isEmpty)
                let confirmed = try await events(lifecycle.store, .appleRevocationConfirmed)
                #expect(confirmed.map(\.userID) == [userID])
                #expect(try await lifecycle.emulatorCalls("revoke", outcome: "200") == 1)
                #expect(try await lifecycle.emulatorCalls("revoke", outcome: "fault: 200, ignored") == 1)
            }
        }
    }

    // MARK: Helpers

    /// Waits for the revocation worker's next attempt at the one queued revocation to end: tried again and still
    /// queued (its attempts grew past `attempts`), or finished, which records the confirmation last. The wait is for
    /// that attempt, however long a loaded machine makes it (an Apple call and a refresh grant at the emulator), not
    /// for a time; two minutes only guard against a worker that never acts, and the caller's expectations then fail.
    private func nextAttempt(_ lifecycle: LifecycleHarness, after attempts: Int) async throws {
        let guardDeadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < guardDeadline {
            if let queued = try await pending(lifecycle).first {
                if queued.attempts > attempts { return }
            } else if try await !events(lifecycle.store, .appleRevocationConfirmed).isEmpty {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private func events(_ store: any AccountStore, _ type: AuditEventType) async throws -> [AuditEvent] {
        try await store.auditEvents(AuditEventFilter(types: [type]), limit: 100, after: nil).items
    }

    private func queuedRevocationSurvivesARestart(store: any AccountStore) async throws {
        try await LifecycleHarness.run(store: store) { lifecycle in
            let found = Mutex<UserID?>(nil)
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("restart@example.com")
                found.withLock { $0 = signIn.json.user.string("id").flatMap(UserID.init) }
                try await server.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "error"])
                let deleted = try await server.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
                #expect(deleted.status == .noContent)
            }
            let userID = try #require(found.withLock { $0 })
            #expect(try await store.user(id: userID) == nil)
            let queued = try await pending(lifecycle)
            #expect(queued.count == 1)
            #expect(queued.first?.userID == userID)
            #expect(queued.first?.lastError?.isEmpty == false)
            #expect(try await lifecycle.emulatorCalls("revoke", outcome: "200") == 0)

            // Apple is back; a new server process on the same store finishes the job.
            try await lifecycle.control("/emulator/faults", ["endpoint": "revoke", "mode": "off"])
            lifecycle.clock.advance(by: 3600)
            try await lifecycle.withServer { _ in
                let revoked = try await lifecycle.eventually {
                    try await lifecycle.emulatorCalls("revoke", outcome: "200") == 1
                }
                #expect(revoked)
                #expect(try await lifecycle.eventually { try await pending(lifecycle).isEmpty })
            }
        }
    }

    private func pending(_ lifecycle: LifecycleHarness) async throws -> [PendingAppleRevocation] {
        try await lifecycle.store.dueAppleRevocations(now: .distantFuture, limit: 100)
    }
}
