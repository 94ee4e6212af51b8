import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of the lifecycle events each change records with itself.
    static let lifecycleEventChecks: [Check] = [
        Check("each lifecycle change records its events, in commit order, with stable ids", changesRecordEvents),
        Check("a change that changes nothing records no event", noChangeRecordsNoEvent),
        Check("reuse and a replayed code record their session's end by the system", detectedTheftRecordsEvents),
        Check("Apple's notifications record their events", notificationsRecordEvents),
        Check("30 concurrent endings record 30 events with consecutive sequences", concurrentEventsAreConsecutive),
        Check("lifecycleEvents pages by sequence and purgeLifecycleEvents removes only older ones", eventsPageAndPurge),
    ]

    /// Every event kept, read in pages of `page` (so that paging is exercised too).
    static func allEvents(_ store: any AccountStore, page: Int = 3) async throws -> [LifecycleEvent] {
        var events: [LifecycleEvent] = []
        while true {
            let next = try await store.lifecycleEvents(after: events.last?.sequence, limit: page)
            events += next
            if next.count < page { return events }
        }
    }

    static func changesRecordEvents(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(email: "ada@example.com", verified: true, isPrivate: false, given: "Ada", family: "L")
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        let created = try await store.lifecycleEvents(after: nil, limit: 10)
        #expect(created.map(\.type) == [.userCreated])
        let first = try #require(created.first)
        #expect(first.sequence == 1, "the first event of a store has sequence 1")
        #expect(first.userID == user.id)
        Fixture.expectSameTime(first.time, Fixture.time(0))
        #expect(first.data["user_id"] == .string(user.id.description))
        #expect(first.data["apple_sub"] == .string(user.appleUserID.rawValue))
        #expect(first.data["email"] == .string("ada@example.com"))
        #expect(first.data["email_verified"] == .bool(true))
        #expect(first.data["given_name"] == .string("Ada"))

        _ = try await store.signIn(facts, now: Fixture.time(5))
        #expect(try await allEvents(store).count == 1, "a returning sign-in records no event")

        let one = Fixture.refreshToken(SessionID(), user.id)
        let two = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: one, now: Fixture.time(10))
        try await store.createSession(firstToken: two, now: Fixture.time(11))
        #expect(
            try await store.revokeSession(
                one.sessionID,
                by: .user,
                reason: SessionEndReason.logout,
                now: Fixture.time(20)
            )
        )
        let disabled = try #require(
            try await store.disableUser(id: user.id, by: .serviceToken("ops"), now: Fixture.time(30))
        )
        #expect(disabled.endedSessions == [two.sessionID])
        _ = try await store.enableUser(id: user.id, by: .operator, now: Fixture.time(40))
        _ = try await store.endAppleConsent(userID: user.id, by: .system, now: Fixture.time(50))
        let newSub = Fixture.appleUserID()
        _ = try await store.reassignAppleUser(
            userID: user.id,
            newAppleUserID: newSub,
            email: nil,
            isPrivateEmail: nil,
            now: Fixture.time(60)
        )
        let three = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: three, now: Fixture.time(65))
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        _ = try #require(
            try await store.deleteUser(
                id: user.id,
                mode: .delete,
                appleRevocationDueAt: Fixture.time(100),
                by: .user,
                now: Fixture.time(70)
            )
        )

        let events = try await allEvents(store)
        #expect(
            events.map(\.type) == [
                .userCreated, .sessionEnded, .sessionEnded, .userDisabled, .userEnabled, .userConsentRevoked,
                .userTransferred, .sessionEnded, .userDeleted,
            ]
        )
        #expect(events.map(\.sequence) == Array(1...Int64(events.count)), "sequences count up by one")
        #expect(Set(events.map(\.id)).count == events.count, "ids are unique")
        #expect(events.allSatisfy { $0.userID == user.id })
        #expect(try await allEvents(store, page: 100) == events, "a second read answers the same events")

        let logout = events[1]
        #expect(logout.data["session_id"] == .string(one.sessionID.description))
        #expect(logout.data["reason"] == .string("logout"))
        #expect(logout.data["by"] == .string("user"))
        Fixture.expectSameTime(logout.time, Fixture.time(20))
        #expect(events[2].data["session_id"] == .string(two.sessionID.description))
        #expect(events[2].data["reason"] == .string(SessionEndReason.accountDisabled))
        #expect(events[3].data["by"] == .string("service_token"))
        #expect(events[4].data["by"] == .string("operator"))
        #expect(events[5].data["by"] == .string("system"))
        #expect(events[6].data["old_apple_sub"] == .null, "blanked by the deletion")
        #expect(events[6].data["new_apple_sub"] == .null, "blanked by the deletion")
        #expect(events[7].data["reason"] == .string(SessionEndReason.accountDeleted))
        let deletion = events[8]
        #expect(deletion.data["mode"] == .string("delete"))
        #expect(deletion.data["by"] == .string("user"))
        #expect(deletion.data["apple_revocation"] == .string("queued"))
        Fixture.expectSameTime(deletion.time, Fixture.time(70))

        // The deletion blanked what named the person in the account's earlier events; ids, types and times stay.
        let blanked = events[0]
        #expect(blanked.id == first.id)
        #expect(blanked.data["email"] == .null)
        #expect(blanked.data["given_name"] == .null)
        #expect(blanked.data["apple_sub"] == .null)
        #expect(blanked.data["user_id"] == .string(user.id.description))
        #expect(blanked.data["email_verified"] == .bool(true))
    }

    static func noChangeRecordsNoEvent(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(10))
        let before = try await allEvents(store)
        #expect(before.map(\.type) == [.userCreated])

        _ = try await store.enableUser(id: user.id, by: .operator, now: Fixture.time(20))
        #expect(
            try await store.deleteUser(
                id: UserID(),
                mode: .delete,
                appleRevocationDueAt: nil,
                by: .operator,
                now: Fixture.time(20)
            ) == nil
        )
        #expect(try await store.disableUser(id: UserID(), by: .operator, now: Fixture.time(20)) == nil)
        #expect(try await store.revokeSession(SessionID(), by: .user, reason: "logout", now: Fixture.time(20)) == false)
        #expect(
            try await store.revokeSessions(userID: UserID(), by: .operator, reason: "admin", now: Fixture.time(20))
                .isEmpty
        )
        #expect(try await allEvents(store) == before, "nothing changed, nothing recorded")

        #expect(try await store.revokeSession(session.sessionID, by: .user, reason: "logout", now: Fixture.time(30)))
        #expect(
            try await store.revokeSession(session.sessionID, by: .user, reason: "logout", now: Fixture.time(40))
                == false
        )
        #expect(
            try await store.revokeSessions(userID: user.id, by: .operator, reason: "admin", now: Fixture.time(50))
                .isEmpty
        )
        #expect(try await allEvents(store).map(\.type) == [.userCreated, .sessionEnded], "a session ends once")
    }

    static func detectedTheftRecordsEvents(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let first = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        let next = Fixture.refreshToken(first.sessionID, user.id)
        _ = try await store.rotateRefreshToken(presentedHash: first.hash, next: next, now: Fixture.time(10))
        let reused = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: Fixture.refreshToken(first.sessionID, user.id),
            now: Fixture.time(20)
        )
        guard case .reused = reused else {
            Issue.record("a rotated token presented again is reuse: \(reused)")
            return
        }

        let code = authorizationCode(user.id)
        try await store.saveAuthorizationCode(code)
        let redeemed = newSession()
        _ = try await store.redeemAuthorizationCode(
            codeHash: code.codeHash,
            startingSession: redeemed,
            now: Fixture.time(30)
        )
        _ = try await store.redeemAuthorizationCode(
            codeHash: code.codeHash,
            startingSession: newSession(),
            now: Fixture.time(40)
        )

        let ended = try await allEvents(store).filter { $0.type == .sessionEnded }
        #expect(
            ended.map { $0.data["session_id"] } == [
                .string(first.sessionID.description), .string(redeemed.sessionID.description),
            ]
        )
        #expect(
            ended.map { $0.data["reason"] } == [
                .string(SessionEndReason.reuse), .string(SessionEndReason.codeReplayed),
            ]
        )
        #expect(ended.allSatisfy { $0.data["by"] == .string("system") })
    }

    static func notificationsRecordEvents(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(1))
        _ = try await store.applyAppleNotification(
            notification("email-disabled", user.appleUserID, at: 10),
            action: .setEmailForwarding(false),
            now: Fixture.time(100)
        )
        // A redelivery and a stale event change nothing and record nothing.
        _ = try await store.applyAppleNotification(
            notification("email-disabled", user.appleUserID, at: 10),
            action: .setEmailForwarding(false),
            now: Fixture.time(110)
        )
        _ = try await store.applyAppleNotification(
            notification("email-enabled", user.appleUserID, at: 5),
            action: .setEmailForwarding(true),
            now: Fixture.time(120)
        )
        _ = try await store.applyAppleNotification(
            notification("consent-revoked", user.appleUserID, at: 200),
            action: .endConsent,
            now: Fixture.time(200)
        )
        _ = try await store.applyAppleNotification(
            notification("account-delete", user.appleUserID, at: 300),
            action: .deleteAccount(.anonymise),
            now: Fixture.time(300)
        )
        let events = try await allEvents(store)
        #expect(
            events.map(\.type) == [
                .userCreated, .userUpdated, .sessionEnded, .userConsentRevoked, .userDeleted,
            ]
        )
        #expect(events[1].data["changed"] == .string("email_forwarding"))
        #expect(events[1].data["email_forwarding"] == .bool(false))
        #expect(events[2].data["reason"] == .string(SessionEndReason.appleConsentRevoked))
        #expect(events[2].data["by"] == .string("apple"))
        #expect(events[3].data["by"] == .string("apple"))
        #expect(events[4].data["by"] == .string("apple"))
        #expect(events[4].data["mode"] == .string("anonymise"))
        #expect(events[4].data["apple_revocation"] == .string("none"), "Apple deleted the Apple ID itself")
    }

    static func concurrentEventsAreConsecutive(_ store: any AccountStore) async throws {
        try await Fixture.warmUp(store)
        var sessions: [SessionID] = []
        for index in 0..<30 {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index))).user
            let token = Fixture.refreshToken(SessionID(), user.id)
            try await store.createSession(firstToken: token, now: Fixture.time(100))
            sessions.append(token.sessionID)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sessionID in sessions {
                group.addTask {
                    _ = try await store.revokeSession(sessionID, by: .user, reason: "logout", now: Fixture.time(200))
                }
            }
            try await group.waitForAll()
        }
        let events = try await allEvents(store, page: 7)
        #expect(events.count == 60)
        #expect(events.map(\.sequence) == Array(1...60), "no sequence is skipped or taken twice")
        let ended = events.filter { $0.type == .sessionEnded }.compactMap { $0.data["session_id"]?.text }
        #expect(Set(ended) == Set(sessions.map(\.description)))
        #expect(ended.count == 30, "each session's end is recorded once")
    }

    static func eventsPageAndPurge(_ store: any AccountStore) async throws {
        for index in 0..<5 {
            _ = try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index) * 1_000))
        }
        let all = try await store.lifecycleEvents(after: nil, limit: 100)
        #expect(all.count == 5)
        #expect(try await store.lifecycleEvents(after: 2, limit: 2).map(\.sequence) == [3, 4])
        #expect(try await store.lifecycleEvents(after: 5, limit: 10).isEmpty)
        #expect(try await store.lifecycleEvents(after: 0, limit: 0).isEmpty)

        #expect(try await store.purgeLifecycleEvents(before: Fixture.time(2_000)) == 2)
        #expect(try await store.lifecycleEvents(after: nil, limit: 100).map(\.sequence) == [3, 4, 5])
        #expect(try await store.purgeLifecycleEvents(before: Fixture.time(2_000)) == 0)
        // New events continue the sequence after a purge.
        _ = try await store.signIn(Fixture.facts(), now: Fixture.time(10_000))
        #expect(try await store.lifecycleEvents(after: 5, limit: 10).map(\.sequence) == [6])
    }
}
