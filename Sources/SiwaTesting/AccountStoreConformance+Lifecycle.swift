import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of account deletion, Apple consent, token validation, the revocation queue, notifications, web
    /// states and housekeeping.
    static let lifecycleChecks: [Check] = [
        Check("deleteUser queues the Apple revocation and records the deletion", deleteUserQueuesRevocation),
        Check("deleteUser in anonymise mode keeps a blank account", deleteUserAnonymises),
        Check("endAppleConsent ends sessions and drops the Apple token until the next sign-in", endAppleConsent),
        Check("usersChanged(since:) lists updated and deleted accounts", usersChangedSince),
        Check("Apple tokens due for validation are claimed once", appleTokenValidationIsClaimedOnce),
        Check("10 concurrent validation claims: one wins", concurrentValidationClaims),
        Check("the revocation queue postpones and finishes", revocationQueue),
        Check("a notification applies once and is logged", notificationAppliesOnce),
        Check("notifications set email forwarding and delete accounts", notificationActions),
        Check("10 concurrent deliveries of one notification apply once", concurrentNotificationDeliveries),
        Check("notifications apply in event order: an older event is logged as stale", notificationsApplyInEventOrder),
        Check("a web state is consumed once while unexpired", webStateIsConsumedOnce),
        Check("10 concurrent consumptions of one web state succeed once", concurrentWebStateConsumptions),
        Check("purgeExpired removes only what can no longer be used", purgeRemovesExpired),
        Check("checkRefreshToken reports a token's state and changes nothing", checkRefreshTokenChangesNothing),
        Check("signIn starts the session in the same transaction, or nothing", signInStartsTheSession),
        Check(
            "signIn links by email only when asked, verified, not a relay, and never takes an account over",
            signInLinksByEmail
        ),
        Check("a returning sign-in with a session updates what changed, and writes nothing else", returningSignIn),
        Check("20 concurrent returning sign-ins of one user each start a session", concurrentReturningSignIns),
    ]

    // MARK: Deletion and consent

    static func deleteUserQueuesRevocation(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let token = Fixture.appleToken(user.id)
        try await store.saveAppleToken(token)
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(10))

        let deleted = try #require(
            try await store.deleteUser(
                id: user.id,
                mode: .delete,
                appleRevocationDueAt: Fixture.time(100),
                now: Fixture.time(100)
            )
        )
        Fixture.expectSameUser(deleted.user, user)
        #expect(deleted.endedSessions == [session.sessionID])
        let queued = try #require(deleted.queuedRevocation, "the Apple token's revocation is queued")
        #expect(queued.userID == user.id)
        #expect(queued.clientID == token.clientID)
        #expect(queued.encryptedRefreshToken == token.encryptedRefreshToken)
        #expect(queued.attempts == 0)
        Fixture.expectSameTime(queued.nextAttemptAt, Fixture.time(100), "due at once")

        let due = try await store.dueAppleRevocations(now: Fixture.time(100), limit: 10)
        #expect(due.map(\.id) == [queued.id], "the queued revocation is stored")
        #expect(due.first?.encryptedRefreshToken == token.encryptedRefreshToken)
        #expect(try await store.user(id: user.id) == nil)
        #expect(try await store.appleToken(userID: user.id) == nil)
        let deletions = try await store.deletedAccounts(since: Fixture.time(100))
        #expect(deletions.map(\.userID) == [user.id], "the deletion is recorded for other instances")
        Fixture.expectSameTime(deletions.first?.deletedAt, Fixture.time(100))
        #expect(try await store.deletedAccounts(since: Fixture.time(101)).isEmpty)

        let other = try await store.signIn(Fixture.facts(), now: Fixture.time(200)).user
        let none = try await store.deleteUser(
            id: other.id,
            mode: .delete,
            appleRevocationDueAt: Fixture.time(300),
            now: Fixture.time(300)
        )
        #expect(none != nil && none?.queuedRevocation == nil, "no Apple token, nothing queued")
    }

    static func deleteUserAnonymises(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(
            email: "ann@example.com",
            verified: true,
            isPrivate: false,
            given: "Ann",
            family: "Lee"
        )
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(10))

        let deleted = try #require(
            try await store.deleteUser(
                id: user.id,
                mode: .anonymise,
                appleRevocationDueAt: nil,
                now: Fixture.time(50)
            )
        )
        #expect(deleted.endedSessions == [session.sessionID])
        let kept = try #require(try await store.user(id: user.id), "the anonymised account stays")
        #expect(kept.email == nil && kept.givenName == nil && kept.familyName == nil, "personal data is removed")
        #expect(kept.appleUserID != user.appleUserID, "the Apple user id is removed")
        #expect(try await store.user(appleUserID: user.appleUserID) == nil)
        #expect(try await store.appleToken(userID: user.id) == nil)
        let outcome = try await store.rotateRefreshToken(
            presentedHash: session.hash,
            next: Fixture.refreshToken(session.sessionID, user.id),
            now: Fixture.time(60)
        )
        #expect(outcome == .notFound || outcome == .revoked(sessionID: session.sessionID, userID: user.id))
        #expect(try await store.deletedAccounts(since: Fixture.time(50)).map(\.userID) == [user.id])

        let again = try await store.signIn(facts, now: Fixture.time(100))
        #expect(again.isNewUser, "the same Apple user signing in again gets a new account")
        #expect(again.user.id != user.id)
    }

    static func endAppleConsent(_ store: any AccountStore) async throws {
        let facts = Fixture.facts()
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let first = Fixture.refreshToken(SessionID(), user.id)
        let second = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(10))
        try await store.createSession(firstToken: second, now: Fixture.time(20))

        let ended = try await store.endAppleConsent(userID: user.id, now: Fixture.time(100))
        #expect(Set(ended) == [first.sessionID, second.sessionID], "every session ends")
        #expect(Set(try await store.revokedSessions(since: Fixture.time(100)).map(\.sessionID)) == Set(ended))
        #expect(try await store.appleToken(userID: user.id) == nil, "the Apple token is dropped")
        let marked = try #require(try await store.user(id: user.id))
        Fixture.expectSameTime(marked.appleConsentRevokedAt, Fixture.time(100))
        #expect(try await store.endAppleConsent(userID: user.id, now: Fixture.time(110)).isEmpty)

        let back = try await store.signIn(facts, now: Fixture.time(200))
        #expect(!back.isNewUser, "the next sign-in finds the account")
        #expect(back.user.appleConsentRevokedAt == nil, "and clears the mark")
        #expect(try await store.endAppleConsent(userID: UserID(), now: Fixture.time(300)).isEmpty)
    }

    static func usersChangedSince(_ store: any AccountStore) async throws {
        let old = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let updated = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let deleted = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let consent = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        _ = try await store.signIn(Fixture.facts(updated.appleUserID, email: "new@example.com"), now: Fixture.time(500))
        _ = try await store.deleteUser(
            id: deleted.id,
            mode: .delete,
            appleRevocationDueAt: nil,
            now: Fixture.time(600)
        )
        try await store.endAppleConsent(userID: consent.id, now: Fixture.time(700))

        let changed = Set(try await store.usersChanged(since: Fixture.time(500)))
        #expect(changed == [updated.id, deleted.id, consent.id])
        #expect(!changed.contains(old.id))
        #expect(try await store.usersChanged(since: Fixture.time(701)).isEmpty)
    }

    // MARK: Apple token validation

    static func appleTokenValidationIsClaimedOnce(_ store: any AccountStore) async throws {
        let never = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let stale = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let fresh = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(never.id))
        var staleToken = Fixture.appleToken(stale.id)
        staleToken.lastValidatedAt = Fixture.time(1_000)
        try await store.saveAppleToken(staleToken)
        var freshToken = Fixture.appleToken(fresh.id)
        freshToken.lastValidatedAt = Fixture.time(9_000)
        try await store.saveAppleToken(freshToken)

        let due = try await store.appleTokensDue(validatedBefore: Fixture.time(5_000), limit: 10)
        #expect(due.map(\.userID) == [never.id, stale.id], "never-validated first, then the oldest; fresh ones not")
        #expect(
            try await store.appleTokensDue(validatedBefore: Fixture.time(5_000), limit: 1).map(\.userID) == [never.id]
        )

        let claimed = try await store.claimAppleTokenValidation(
            userID: stale.id,
            validatedBefore: Fixture.time(5_000),
            now: Fixture.time(10_000)
        )
        #expect(claimed?.userID == stale.id, "a due token is claimed")
        Fixture.expectSameTime(claimed?.lastValidatedAt, Fixture.time(10_000), "the claim marks it validated")
        let second = try await store.claimAppleTokenValidation(
            userID: stale.id,
            validatedBefore: Fixture.time(5_000),
            now: Fixture.time(10_001)
        )
        #expect(second == nil, "a claimed token is no longer due")
        let notDue = try await store.claimAppleTokenValidation(
            userID: fresh.id,
            validatedBefore: Fixture.time(5_000),
            now: Fixture.time(10_000)
        )
        #expect(notDue == nil)
        #expect(
            try await store.claimAppleTokenValidation(
                userID: UserID(),
                validatedBefore: Fixture.time(5_000),
                now: Fixture.time(10_000)
            ) == nil
        )

        try await store.setAppleTokenValidated(userID: stale.id, at: Fixture.time(2_000))
        let again = try await store.appleToken(userID: stale.id)
        Fixture.expectSameTime(again?.lastValidatedAt, Fixture.time(2_000), "the time can be set back to retry")
        #expect(
            try await store.appleTokensDue(validatedBefore: Fixture.time(5_000), limit: 10).map(\.userID).contains(
                stale.id
            )
        )
    }

    static func concurrentValidationClaims(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        try await Fixture.warmUp(store)
        let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<10 {
                group.addTask {
                    try await store.claimAppleTokenValidation(
                        userID: user.id,
                        validatedBefore: Fixture.time(5_000),
                        now: Fixture.time(10_000 + Int64(attempt))
                    ) != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1, "exactly one racing claim wins")
    }

    // MARK: Revocation queue

    static func revocationQueue(_ store: any AccountStore) async throws {
        var queued: [PendingAppleRevocation] = []
        for offset in 0..<3 {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
            try await store.saveAppleToken(Fixture.appleToken(user.id))
            let deleted = try await store.deleteUser(
                id: user.id,
                mode: .delete,
                appleRevocationDueAt: Fixture.time(100 + Int64(offset)),
                now: Fixture.time(100 + Int64(offset))
            )
            queued.append(try #require(deleted?.queuedRevocation))
        }
        #expect(try await store.dueAppleRevocations(now: Fixture.time(99), limit: 10).isEmpty, "not due before")
        #expect(try await store.pendingAppleRevocationCount() == queued.count, "counted, due or not")
        #expect(try await store.dueAppleRevocations(now: Fixture.time(200), limit: 10).map(\.id) == queued.map(\.id))
        #expect(
            try await store.dueAppleRevocations(now: Fixture.time(200), limit: 2).map(\.id) == [
                queued[0].id, queued[1].id,
            ]
        )

        try await store.postponeAppleRevocation(
            id: queued[0].id,
            until: Fixture.time(5_000),
            error: "apple unreachable"
        )
        try await store.finishAppleRevocation(id: queued[1].id)
        #expect(try await store.pendingAppleRevocationCount() == queued.count - 1, "a finished one is not counted")
        #expect(try await store.dueAppleRevocations(now: Fixture.time(200), limit: 10).map(\.id) == [queued[2].id])
        let postponed = try await store.dueAppleRevocations(now: Fixture.time(5_000), limit: 10)
        #expect(postponed.map(\.id) == [queued[0].id, queued[2].id])
        let first = try #require(postponed.first)
        #expect(first.attempts == 1)
        #expect(first.lastError == "apple unreachable")
        Fixture.expectSameTime(first.nextAttemptAt, Fixture.time(5_000))
        try await store.postponeAppleRevocation(id: queued[0].id, until: Fixture.time(6_000), error: "again")
        #expect(try await store.dueAppleRevocations(now: Fixture.time(6_000), limit: 10).first?.attempts == 2)
        try await store.finishAppleRevocation(id: UUID())
    }

    // MARK: Notifications

    static func notification(
        _ type: String,
        _ appleUserID: AppleUserID,
        at milliseconds: Int64
    ) -> AppleNotificationRecord {
        AppleNotificationRecord(
            eventKey: "\(type)|\(appleUserID)|\(milliseconds)",
            type: type,
            appleUserID: appleUserID,
            userID: nil,
            eventTime: Fixture.time(milliseconds),
            receivedAt: Fixture.time(0),
            outcome: ""
        )
    }

    static func notificationAppliesOnce(_ store: any AccountStore) async throws {
        let facts = Fixture.facts()
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(10))

        let event = notification("consent-revoked", user.appleUserID, at: 50)
        let first = try await store.applyAppleNotification(event, action: .endConsent, now: Fixture.time(100))
        guard case .applied(let record, let ended, let deletedUser) = first else {
            Issue.record("the first delivery applies: \(first)")
            return
        }
        #expect(record.userID == user.id)
        #expect(record.outcome == "applied")
        Fixture.expectSameTime(record.receivedAt, Fixture.time(100))
        Fixture.expectSameTime(record.eventTime, Fixture.time(50))
        #expect(ended == [session.sessionID])
        #expect(deletedUser == nil)
        #expect(try await store.appleToken(userID: user.id) == nil)

        // The user signs in again; a repeated delivery of the old event must not end the new session.
        _ = try await store.signIn(facts, now: Fixture.time(200))
        let next = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: next, now: Fixture.time(210))
        let repeated = try await store.applyAppleNotification(event, action: .endConsent, now: Fixture.time(300))
        guard case .duplicate(let earlier) = repeated else {
            Issue.record("a repeated delivery is a duplicate: \(repeated)")
            return
        }
        #expect(earlier.eventKey == event.eventKey)
        Fixture.expectSameTime(earlier.receivedAt, Fixture.time(100), "the log keeps the first delivery")
        #expect(try await store.revokedSessions(since: Fixture.time(200)).isEmpty, "the duplicate changes nothing")

        let stranger = notification("consent-revoked", Fixture.appleUserID(), at: 60)
        let unknown = try await store.applyAppleNotification(stranger, action: .endConsent, now: Fixture.time(400))
        if case .applied(let record, _, _) = unknown {
            #expect(record.outcome == "unknown_user")
            #expect(record.userID == nil)
        } else {
            Issue.record("an unknown user's event is logged: \(unknown)")
        }
        let log = try await store.appleNotifications(limit: 10)
        #expect(log.map(\.eventKey) == [stranger.eventKey, event.eventKey], "newest first, one row per event")
        #expect(try await store.appleNotifications(limit: 1).count == 1)
    }

    static func notificationsApplyInEventOrder(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(600_000))

        // Consent revoked 10 minutes before the latest sign-in: the user consented again since.
        let old = try await store.applyAppleNotification(
            notification("consent-revoked", user.appleUserID, at: 0),
            action: .endConsent,
            now: Fixture.time(700_000)
        )
        guard case .applied(let record, let ended, _) = old else {
            Issue.record("a stale event is logged: \(old)")
            return
        }
        #expect(record.outcome == "stale")
        #expect(ended.isEmpty, "the newer session stays")
        #expect(try await store.revokedSessions(since: Fixture.time(0)).isEmpty)
        #expect(try await store.appleToken(userID: user.id) != nil, "the fresh Apple token stays")
        #expect(try await store.user(id: user.id)?.appleConsentRevokedAt == nil)

        // A newer email-enabled, then an older email-disabled delivered late: forwarding stays on.
        _ = try await store.applyAppleNotification(
            notification("email-disabled", user.appleUserID, at: 10),
            action: .setEmailForwarding(false),
            now: Fixture.time(700_001)
        )
        _ = try await store.applyAppleNotification(
            notification("email-enabled", user.appleUserID, at: 30),
            action: .setEmailForwarding(true),
            now: Fixture.time(700_002)
        )
        let late = try await store.applyAppleNotification(
            notification("email-disabled", user.appleUserID, at: 20),
            action: .setEmailForwarding(false),
            now: Fixture.time(700_003)
        )
        if case .applied(let record, _, _) = late { #expect(record.outcome == "stale") }
        #expect(try await store.user(id: user.id)?.emailForwarding == true, "the newest email event wins")

        // A consent revoked after the latest sign-in applies.
        let current = try await store.applyAppleNotification(
            notification("consent-revoked", user.appleUserID, at: 650_000),
            action: .endConsent,
            now: Fixture.time(700_004)
        )
        if case .applied(let record, let ended, _) = current {
            #expect(record.outcome == "applied")
            #expect(ended == [session.sessionID])
        } else {
            Issue.record("a current event applies: \(current)")
        }
    }

    static func notificationActions(_ store: any AccountStore) async throws {
        let user = try await store.signIn(
            Fixture.facts(email: "x@privaterelay.appleid.com", verified: true, isPrivate: true),
            now: Fixture.time(0)
        ).user
        #expect(user.emailForwarding)
        _ = try await store.applyAppleNotification(
            notification("email-disabled", user.appleUserID, at: 10),
            action: .setEmailForwarding(false),
            now: Fixture.time(100)
        )
        #expect(try await store.user(id: user.id)?.emailForwarding == false)
        _ = try await store.applyAppleNotification(
            notification("email-enabled", user.appleUserID, at: 20),
            action: .setEmailForwarding(true),
            now: Fixture.time(200)
        )
        #expect(try await store.user(id: user.id)?.emailForwarding == true)

        let ignored = try await store.applyAppleNotification(
            notification("some-future-type", user.appleUserID, at: 30),
            action: .none,
            now: Fixture.time(300)
        )
        if case .applied(let record, _, _) = ignored { #expect(record.outcome == "ignored") }

        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let deleted = try await store.applyAppleNotification(
            notification("account-delete", user.appleUserID, at: 40),
            action: .deleteAccount(.delete),
            now: Fixture.time(400)
        )
        guard case .applied(_, _, let deletedUser) = deleted else {
            Issue.record("account-delete applies: \(deleted)")
            return
        }
        #expect(deletedUser == user.id)
        #expect(try await store.user(id: user.id) == nil)
        #expect(
            try await store.dueAppleRevocations(now: Fixture.time(10_000), limit: 10).isEmpty,
            "Apple deleted the Apple ID: nothing to revoke"
        )
        // The log keeps the four events, but no longer who they were about.
        let log = try await store.appleNotifications(limit: 10)
        #expect(log.count == 4)
        #expect(log.allSatisfy { $0.appleUserID != user.appleUserID && $0.userID == nil }, "deleted with the account")
        // A redelivery of the deletion is still recognised.
        let again = try await store.applyAppleNotification(
            notification("account-delete", user.appleUserID, at: 40),
            action: .deleteAccount(.delete),
            now: Fixture.time(500)
        )
        if case .duplicate = again {} else { Issue.record("a redelivered deletion is a duplicate: \(again)") }
    }

    static func concurrentNotificationDeliveries(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let event = notification("email-disabled", user.appleUserID, at: 10)
        try await Fixture.warmUp(store)
        let applied = try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<10 {
                group.addTask {
                    let outcome = try await store.applyAppleNotification(
                        event,
                        action: .setEmailForwarding(false),
                        now: Fixture.time(100 + Int64(attempt))
                    )
                    if case .applied = outcome { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(applied == 1, "exactly one delivery applies")
        #expect(try await store.appleNotifications(limit: 10).count == 1)
    }

    // MARK: Web states

    static func webState(expiresAt milliseconds: Int64 = 600_000) -> WebFlowState {
        WebFlowState(
            stateHash: Fixture.randomBytes(32),
            nonce: "nonce-\(UUID())",
            returnURL: "/account?tab=1",
            createdAt: Fixture.time(0),
            expiresAt: Fixture.time(milliseconds)
        )
    }

    static func webStateIsConsumedOnce(_ store: any AccountStore) async throws {
        let state = webState()
        try await store.saveWebFlowState(state)
        await #expect(throws: StoreError.duplicate, "a state is saved once") {
            try await store.saveWebFlowState(state)
        }
        let outcome = try await store.consumeWebFlowState(stateHash: state.stateHash, now: Fixture.time(1_000))
        guard case .consumed(let consumed) = outcome else {
            Issue.record("a pending state is consumed: \(outcome)")
            return
        }
        #expect(consumed.stateHash == state.stateHash)
        #expect(consumed.nonce == state.nonce)
        #expect(consumed.returnURL == state.returnURL)
        Fixture.expectSameTime(consumed.createdAt, state.createdAt)
        Fixture.expectSameTime(consumed.expiresAt, state.expiresAt)
        #expect(
            try await store.consumeWebFlowState(stateHash: state.stateHash, now: Fixture.time(2_000)) == .alreadyUsed
        )

        let expired = webState(expiresAt: 1_000)
        try await store.saveWebFlowState(expired)
        #expect(try await store.consumeWebFlowState(stateHash: expired.stateHash, now: Fixture.time(1_000)) == .expired)
        #expect(
            try await store.consumeWebFlowState(stateHash: Fixture.randomBytes(32), now: Fixture.time(0)) == .notFound
        )
    }

    static func concurrentWebStateConsumptions(_ store: any AccountStore) async throws {
        let state = webState()
        try await store.saveWebFlowState(state)
        try await Fixture.warmUp(store)
        let consumed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<10 {
                group.addTask {
                    let outcome = try await store.consumeWebFlowState(
                        stateHash: state.stateHash,
                        now: Fixture.time(1_000 + Int64(attempt))
                    )
                    if case .consumed = outcome { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(consumed == 1, "exactly one racing callback uses the state")
    }

    // MARK: Housekeeping

    static func purgeRemovesExpired(_ store: any AccountStore) async throws {
        let day: Int64 = 86_400_000
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        // A revoked session, an expired one and an active one.
        let revoked = Fixture.refreshToken(SessionID(), user.id, expiresAt: Fixture.time(30 * day))
        try await store.createSession(firstToken: revoked, now: Fixture.time(0))
        try await store.revokeSession(revoked.sessionID, now: Fixture.time(1_000))
        let expired = Fixture.refreshToken(SessionID(), user.id, expiresAt: Fixture.time(day))
        try await store.createSession(firstToken: expired, now: Fixture.time(0))
        let active = Fixture.refreshToken(SessionID(), user.id, expiresAt: Fixture.time(60 * day))
        try await store.createSession(firstToken: active, now: Fixture.time(0))
        try await store.saveServerNonce(hash: Fixture.randomBytes(32), expiresAt: Fixture.time(1_000))
        let liveNonce = Fixture.randomBytes(32)
        try await store.saveServerNonce(hash: liveNonce, expiresAt: Fixture.time(40 * day))
        try await store.saveWebFlowState(webState(expiresAt: 1_000))
        let liveState = WebFlowState(
            stateHash: Fixture.randomBytes(32),
            nonce: "n",
            returnURL: "/",
            createdAt: Fixture.time(0),
            expiresAt: Fixture.time(40 * day)
        )
        try await store.saveWebFlowState(liveState)
        let gone = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        _ = try await store.deleteUser(id: gone.id, mode: .delete, appleRevocationDueAt: nil, now: Fixture.time(0))

        // Ten days on, with a week's retention: the revoked and the expired session are past it, the rest is not.
        let result = try await store.purgeExpired(now: Fixture.time(10 * day), retention: 7 * 86_400)
        #expect(result.serverNonces == 1)
        #expect(result.webFlowStates == 1)
        #expect(result.sessions == 2, "the revoked and the expired session go")
        #expect(result.refreshTokens == 2)
        #expect(result.accountDeletions == 1)
        #expect(try await store.session(refreshTokenHash: active.hash) != nil, "the active session stays")
        #expect(try await store.session(refreshTokenHash: revoked.hash) == nil)
        #expect(try await store.consumeServerNonce(hash: liveNonce, now: Fixture.time(10 * day)), "live nonces stay")
        if case .consumed = try await store.consumeWebFlowState(
            stateHash: liveState.stateHash,
            now: Fixture.time(10 * day)
        ) {
        } else {
            Issue.record("a live web state stays")
        }
        let again = try await store.purgeExpired(now: Fixture.time(10 * day), retention: 7 * 86_400)
        #expect(again.total == 0, "a second purge finds nothing")
    }

    // MARK: Non-rotating refresh

    static func checkRefreshTokenChangesNothing(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id, expiresAt: Fixture.time(10_000))
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        for _ in 0..<3 {
            #expect(
                try await store.checkRefreshToken(presentedHash: first.hash, now: Fixture.time(100))
                    == .current(sessionID: session, userID: user.id),
                "checking again and again leaves the token current"
            )
        }
        #expect(try await store.checkRefreshToken(presentedHash: first.hash, now: Fixture.time(10_000)) == .expired)
        #expect(
            try await store.checkRefreshToken(presentedHash: Fixture.randomBytes(32), now: Fixture.time(0)) == .notFound
        )

        let second = Fixture.refreshToken(session, user.id)
        #expect(
            try await store.rotateRefreshToken(presentedHash: first.hash, next: second, now: Fixture.time(200))
                == .rotated(sessionID: session, userID: user.id),
            "a checked token still rotates"
        )
        #expect(
            try await store.checkRefreshToken(presentedHash: first.hash, now: Fixture.time(300))
                == .used(sessionID: session, userID: user.id)
        )
        #expect(
            try await store.revokedSessions(since: Fixture.time(0)).isEmpty,
            "checking a used token revokes nothing"
        )
        try await store.revokeSession(session, now: Fixture.time(400))
        #expect(
            try await store.checkRefreshToken(presentedHash: second.hash, now: Fixture.time(500))
                == .revoked(sessionID: session, userID: user.id)
        )
    }

    // MARK: Sign-in with its session

    static func signInStartsTheSession(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(email: "s@example.com", verified: true, isPrivate: false)
        func newSession(hash: [UInt8] = Fixture.randomBytes(32)) -> NewSession {
            NewSession(
                sessionID: SessionID(),
                refreshTokenHash: hash,
                issuedAt: Fixture.time(0),
                expiresAt: Fixture.time(3_600_000)
            )
        }
        let first = newSession()
        let created = try await store.signIn(facts, startingSession: first, now: Fixture.time(0))
        #expect(created.isNewUser)
        let found = try await store.session(refreshTokenHash: first.refreshTokenHash)
        #expect(found?.sessionID == first.sessionID, "the new account's session is stored")
        #expect(found?.userID == created.user.id)

        let second = newSession()
        let returning = try await store.signIn(facts, startingSession: second, now: Fixture.time(1_000))
        #expect(!returning.isNewUser)
        #expect(try await store.session(refreshTokenHash: second.refreshTokenHash)?.userID == created.user.id)
        #expect(
            try await store.checkRefreshToken(presentedHash: second.refreshTokenHash, now: Fixture.time(2_000))
                == .current(sessionID: second.sessionID, userID: created.user.id)
        )

        // A session that cannot be stored (its token hash exists) fails the whole sign-in: no account is created.
        let stranger = Fixture.facts()
        await #expect(throws: StoreError.duplicate) {
            try await store.signIn(
                stranger,
                startingSession: newSession(hash: first.refreshTokenHash),
                now: Fixture.time(3_000)
            )
        }
        #expect(try await store.user(appleUserID: stranger.appleUserID) == nil, "the failed sign-in left nothing")
    }

    /// The path a returning user's sign-in with a session takes (each SQL store has a single-statement form of it).
    static func returningSignIn(_ store: any AccountStore) async throws {
        func session() -> NewSession {
            NewSession(
                sessionID: SessionID(),
                refreshTokenHash: Fixture.randomBytes(32),
                issuedAt: Fixture.time(0),
                expiresAt: Fixture.time(3_600_000)
            )
        }
        let apple = Fixture.appleUserID()
        let created = try await store.signIn(
            Fixture.facts(apple, email: "r@example.com", verified: true, isPrivate: false, given: "Rae"),
            startingSession: session(),
            now: Fixture.time(0)
        ).user

        // Nothing new: the account is answered as stored, its updatedAt kept.
        var same = Fixture.facts(apple)
        same.clientID = created.clientID
        let unchanged = try await store.signIn(same, startingSession: session(), now: Fixture.time(1_000))
        #expect(!unchanged.isNewUser)
        Fixture.expectSameUser(unchanged.user, created)
        Fixture.expectSameTime(
            unchanged.user.updatedAt,
            Fixture.time(0),
            "a sign-in that changes nothing writes nothing"
        )
        #expect(try await store.usersChanged(since: Fixture.time(500)).isEmpty, "no change for other instances")

        // New email with its flags, a name where there was none (the given name stays), another client id.
        let changing = AppleSignInFacts(
            appleUserID: apple,
            clientID: ClientID("com.example.other"),
            email: "abc@privaterelay.appleid.com",
            emailVerified: true,
            isPrivateEmail: true,
            givenName: "Other",
            familyName: "Ray"
        )
        let changed = try await store.signIn(changing, startingSession: session(), now: Fixture.time(2_000)).user
        #expect(changed.id == created.id)
        #expect(changed.email == "abc@privaterelay.appleid.com" && changed.isPrivateEmail && changed.emailVerified)
        #expect(changed.givenName == "Rae" && changed.familyName == "Ray")
        #expect(changed.clientID == ClientID("com.example.other"))
        Fixture.expectSameTime(changed.updatedAt, Fixture.time(2_000))
        Fixture.expectSameUser(try #require(try await store.user(id: created.id)), changed)

        // A consent ended by Apple is cleared by the next sign-in, though nothing else changes.
        _ = try await store.endAppleConsent(userID: created.id, now: Fixture.time(3_000))
        var again = Fixture.facts(apple)
        again.clientID = changed.clientID
        let cleared = try await store.signIn(again, startingSession: session(), now: Fixture.time(4_000)).user
        #expect(cleared.appleConsentRevokedAt == nil)
        Fixture.expectSameTime(cleared.updatedAt, Fixture.time(4_000))
    }

    static func concurrentReturningSignIns(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(email: "c@example.com", verified: true, isPrivate: false)
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        let sessions = (0..<20).map { _ in
            NewSession(
                sessionID: SessionID(),
                refreshTokenHash: Fixture.randomBytes(32),
                issuedAt: Fixture.time(0),
                expiresAt: Fixture.time(3_600_000)
            )
        }
        let ids = try await withThrowingTaskGroup(of: UserID.self) { group in
            for session in sessions {
                group.addTask {
                    try await store.signIn(facts, startingSession: session, now: Fixture.time(1_000)).user.id
                }
            }
            return try await group.reduce(into: [UserID]()) { $0.append($1) }
        }
        #expect(ids.count == 20 && Set(ids) == [user.id])
        for session in sessions {
            #expect(try await store.session(refreshTokenHash: session.refreshTokenHash)?.sessionID == session.sessionID)
        }
    }

    // MARK: Linking by email

    static func signInLinksByEmail(_ store: any AccountStore) async throws {
        let original = try await store.signIn(
            Fixture.facts(email: "Link@Example.com", verified: true, isPrivate: false, given: "Lin"),
            now: Fixture.time(0)
        ).user
        try await store.saveAppleToken(Fixture.appleToken(original.id))

        // Not asked: a new Apple ID with the same email is a new account.
        let unasked = try await store.signIn(
            Fixture.facts(email: "link@example.com", verified: true, isPrivate: false),
            now: Fixture.time(100)
        )
        #expect(unasked.isNewUser, "linking is off unless asked")

        // Asked, but unverified or a relay address: no link.
        for (verified, isPrivate, email) in [
            (false, false, "link@example.com"), (true, true, "link@example.com"),
            (true, false, "abc@privaterelay.appleid.com"),
        ] {
            var facts = Fixture.facts(email: email, verified: verified, isPrivate: isPrivate)
            facts.linkByEmail = true
            let outcome = try await store.signIn(facts, now: Fixture.time(200))
            #expect(outcome.isNewUser, "no link for verified \(verified), private \(isPrivate)")
        }

        // Asked, verified and shared, while the account's own Apple ID still signs in: refused, never a takeover.
        var linking = Fixture.facts(email: "LINK@example.com", verified: true, isPrivate: false)
        linking.linkByEmail = true
        let refused = await #expect(throws: StoreError.self) { try await store.signIn(linking, now: Fixture.time(250)) }
        #expect(refused?.code == .duplicate)
        #expect(try await store.user(appleUserID: original.appleUserID)?.id == original.id, "the account stays")
        #expect(try await store.user(appleUserID: linking.appleUserID) == nil, "no account for the second Apple ID")

        // Once the first Apple ID has stopped signing in (consent ended), the account moves to the new Apple ID.
        try await store.endAppleConsent(userID: original.id, now: Fixture.time(280))
        try await store.saveAppleToken(Fixture.appleToken(original.id))
        let linked = try await store.signIn(linking, now: Fixture.time(300))
        #expect(!linked.isNewUser)
        #expect(linked.user.id == original.id, "the oldest account with the email")
        #expect(linked.user.appleUserID == linking.appleUserID)
        #expect(linked.user.givenName == "Lin", "the account keeps its data")
        #expect(
            try await store.user(appleUserID: original.appleUserID) == nil,
            "the old Apple ID no longer signs in here"
        )
        #expect(try await store.appleToken(userID: original.id) == nil, "the old Apple ID's token is dropped")
    }
}
