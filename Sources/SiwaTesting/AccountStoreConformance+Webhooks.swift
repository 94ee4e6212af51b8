import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of the webhook deliveries queued from the lifecycle events.
    static let webhookChecks: [Check] = [
        Check("a new endpoint hears the events after it was first seen, of its types, once", webhooksQueueOnce),
        Check("an account's pending delivery holds back its later ones, not other accounts'", webhooksKeepUserOrder),
        Check("a claimed delivery is not claimed again before its claim lapses", webhookClaimsLapse),
        Check("attempts are recorded; delivered, retried and given-up deliveries list by state", webhookAttempts),
        Check("20 concurrent claims never hand out one delivery twice", concurrentWebhookClaimsAreDisjoint),
        Check("a purge keeps the events of pending deliveries; a deletion blanks them", webhookPurgeAndDeletion),
        Check("an ended session names its channel; a channel's endpoint hears only its sessions", webhookChannels),
    ]

    private static let all = Set(LifecycleEventType.allCases)

    /// Signs in `count` new accounts at `time`; returns them.
    private static func newUsers(_ store: any AccountStore, _ count: Int, at time: Int64) async throws -> [UserRecord] {
        var users: [UserRecord] = []
        for _ in 0..<count { users.append(try await store.signIn(Fixture.facts(), now: Fixture.time(time)).user) }
        return users
    }

    /// Queues everything there is for `endpoint`.
    private static func queueAll(
        _ store: any AccountStore,
        _ endpoint: String,
        types: Set<LifecycleEventType> = all,
        channel: SignInChannel? = nil,
        at time: Int64 = 1_000
    ) async throws -> Int {
        var total = 0
        while true {
            let (queued, more) = try await store.queueWebhookDeliveries(
                endpoint: endpoint,
                types: types,
                channel: channel,
                limit: 2,
                now: Fixture.time(time)
            )
            total += queued
            if !more { return total }
        }
    }

    /// Claims the endpoint `backend`'s due deliveries at `time`, for 30 s.
    private static func claim(_ store: any AccountStore, limit: Int, at time: Int64) async throws -> [WebhookDelivery] {
        try await store.claimWebhookDeliveries(
            endpoint: "backend",
            limit: limit,
            now: Fixture.time(time),
            until: Fixture.time(time + 30_000)
        )
    }

    private static func ok(_ time: Int64) -> WebhookAttempt {
        WebhookAttempt(time: Fixture.time(time), status: 204, error: nil, milliseconds: 12)
    }

    private static func failure(_ time: Int64, status: Int? = 503) -> WebhookAttempt {
        WebhookAttempt(time: Fixture.time(time), status: status, error: "answered \(status ?? 0)", milliseconds: 40)
    }

    static func webhooksQueueOnce(_ store: any AccountStore) async throws {
        _ = try await newUsers(store, 1, at: 0)
        #expect(try await queueAll(store, "backend") == 0, "an endpoint seen for the first time starts at the end")
        let users = try await newUsers(store, 3, at: 10)
        _ = try await store.disableUser(id: users[0].id, by: .operator, now: Fixture.time(20))
        #expect(try await queueAll(store, "backend") == 4)
        #expect(try await queueAll(store, "backend") == 0, "each event is queued once per endpoint")
        #expect(try await queueAll(store, "deletions", types: [.userDeleted]) == 0)
        _ = try await store.deleteUser(
            id: users[1].id,
            mode: .delete,
            appleRevocationDueAt: nil,
            by: .user,
            now: Fixture.time(30)
        )
        #expect(try await queueAll(store, "deletions", types: [.userDeleted]) == 1, "only its types")
        #expect(try await queueAll(store, "backend") == 1)

        let endpoints = try await store.webhookEndpoints()
        #expect(endpoints.map(\.name) == ["backend", "deletions"])
        #expect(endpoints.map(\.pending) == [5, 1])
        Fixture.expectSameTime(endpoints[0].oldestPendingEventAt, Fixture.time(10))
        let listed = try await store.webhookDeliveries(endpoint: "backend", state: nil, before: nil, limit: 10)
        #expect(listed.map(\.event.type) == [.userDeleted, .userDisabled, .userCreated, .userCreated, .userCreated])
        #expect(listed.map(\.event.sequence) == listed.map(\.event.sequence).sorted(by: >), "latest first")
        #expect(listed.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.endpoint == "backend" })
        let page = try await store.webhookDeliveries(
            endpoint: "backend",
            state: .pending,
            before: listed[1].event.sequence,
            limit: 2
        )
        #expect(page.map(\.id) == [listed[2].id, listed[3].id])
    }

    static func webhooksKeepUserOrder(_ store: any AccountStore) async throws {
        _ = try await queueAll(store, "backend")
        let users = try await newUsers(store, 2, at: 0)
        _ = try await store.disableUser(id: users[0].id, by: .operator, now: Fixture.time(10))
        _ = try await store.enableUser(id: users[0].id, by: .operator, now: Fixture.time(20))
        #expect(try await queueAll(store, "backend") == 4)

        let first = try await claim(store, limit: 10, at: 1_000)
        #expect(first.map(\.event.type) == [.userCreated, .userCreated], "one delivery per account at a time")
        #expect(Set(first.map(\.event.userID)) == Set(users.map(\.id)))
        let a = try #require(first.first { $0.event.userID == users[0].id })
        let b = try #require(first.first { $0.event.userID == users[1].id })

        // B's account has nothing more; A's next waits for A's first, which fails and is retried later.
        #expect(try await store.recordWebhookAttempt(b.id, ok(1_100), next: .delivered))
        #expect(try await store.recordWebhookAttempt(a.id, failure(1_100), next: .retry(at: Fixture.time(5_000))))
        #expect(
            try await claim(store, limit: 10, at: 2_000).isEmpty,
            "A's failed first event holds back A's later ones"
        )
        let retried = try await claim(store, limit: 10, at: 5_000)
        #expect(retried.map(\.id) == [a.id])
        #expect(retried.first?.attempts == 1)
        #expect(retried.first?.lastStatus == 503)
        #expect(try await store.recordWebhookAttempt(a.id, ok(5_100), next: .delivered))
        let next = try await claim(store, limit: 10, at: 5_200)
        #expect(next.map(\.event.type) == [.userDisabled], "then A's next event, and only it")
    }

    static func webhookClaimsLapse(_ store: any AccountStore) async throws {
        _ = try await queueAll(store, "backend")
        _ = try await newUsers(store, 1, at: 0)
        #expect(try await queueAll(store, "backend") == 1)
        let claimed = try await claim(store, limit: 5, at: 1_000)
        #expect(claimed.count == 1)
        #expect(
            try await store.claimWebhookDeliveries(
                endpoint: "backend",
                limit: 5,
                now: Fixture.time(30_999),
                until: Fixture.time(60_000)
            ).isEmpty
        )
        #expect(
            try await store.claimWebhookDeliveries(endpoint: "other", limit: 5, now: Fixture.time(40_000), until: .now)
                .isEmpty,
            "another endpoint's deliveries are its own"
        )
        let again = try await claim(store, limit: 5, at: 31_000)
        #expect(again.map(\.id) == claimed.map(\.id), "a claim whose instance died lapses")
    }

    static func webhookAttempts(_ store: any AccountStore) async throws {
        _ = try await queueAll(store, "backend")
        _ = try await newUsers(store, 3, at: 0)
        #expect(try await queueAll(store, "backend") == 3)
        let claimed = try await claim(store, limit: 5, at: 1_000)
        #expect(claimed.count == 3)
        let (delivered, retried, failed) = (claimed[0], claimed[1], claimed[2])
        #expect(try await store.recordWebhookAttempt(delivered.id, failure(1_000, status: nil), next: .retry(at: .now)))
        let failing = try #require(try await store.webhookEndpoints().first)
        Fixture.expectSameTime(failing.failingSince, Fixture.time(1_000))
        #expect(try await store.recordWebhookAttempt(delivered.id, ok(2_000), next: .delivered))
        #expect(try await store.recordWebhookAttempt(retried.id, failure(2_100), next: .retry(at: Fixture.time(9_000))))
        #expect(try await store.recordWebhookAttempt(failed.id, failure(2_200, status: 410), next: .giveUp))
        #expect(!(try await store.recordWebhookAttempt(UUID(), ok(2_300), next: .delivered)), "no such delivery")

        let endpoint = try #require(try await store.webhookEndpoints().first)
        Fixture.expectSameTime(endpoint.failingSince, Fixture.time(2_100), "failing again since the next failure")
        #expect(endpoint.pending == 1)

        let (shown, attempts) = try #require(try await store.webhookDelivery(delivered.id))
        #expect(shown.state == .delivered && shown.attempts == 2 && shown.nextAttemptAt == nil)
        #expect(shown.lastStatus == 204 && shown.lastError == nil)
        Fixture.expectSameTime(shown.deliveredAt, Fixture.time(2_000))
        #expect(attempts.map(\.status) == [nil, 204])
        #expect(attempts.map(\.error) == ["answered 0", nil])
        #expect(attempts.map(\.milliseconds) == [40, 12])
        Fixture.expectSameTime(attempts.first?.time, Fixture.time(1_000))

        let pending = try #require(try await store.webhookDelivery(retried.id)).delivery
        #expect(pending.state == .pending && pending.lastStatus == 503)
        Fixture.expectSameTime(pending.nextAttemptAt, Fixture.time(9_000))
        Fixture.expectSameTime(pending.lastAttemptAt, Fixture.time(2_100))
        let gaveUp = try #require(try await store.webhookDelivery(failed.id)).delivery
        #expect(gaveUp.state == .failed && gaveUp.nextAttemptAt == nil && gaveUp.lastStatus == 410)

        #expect(
            try await store.webhookDeliveries(endpoint: "backend", state: .failed, before: nil, limit: 5).map(\.id)
                == [failed.id]
        )
        #expect(
            try await store.webhookDeliveries(endpoint: "backend", state: .delivered, before: nil, limit: 5).map(\.id)
                == [delivered.id]
        )
        #expect(try await store.webhookDelivery(UUID()) == nil)

        #expect(try await store.redeliverWebhook(failed.id, now: Fixture.time(3_000)))
        #expect(!(try await store.redeliverWebhook(UUID(), now: Fixture.time(3_000))))
        let again = try await claim(store, limit: 5, at: 3_000)
        #expect(again.map(\.id) == [failed.id], "a redelivery is due at once")
        #expect(again.first?.attempts == 1, "and keeps its attempts")

        #expect(try await store.setWebhookEndpoint("backend", disabled: true, now: Fixture.time(4_000)))
        #expect(
            !(try await store.setWebhookEndpoint("backend", disabled: true, now: Fixture.time(4_500))),
            "of two instances disabling it, one did"
        )
        Fixture.expectSameTime(try await store.webhookEndpoints().first?.disabledAt, Fixture.time(4_000))
        #expect(try await store.setWebhookEndpoint("backend", disabled: false, now: Fixture.time(5_000)))
        #expect(!(try await store.setWebhookEndpoint("backend", disabled: false, now: Fixture.time(5_000))))
        let enabled = try #require(try await store.webhookEndpoints().first)
        #expect(enabled.disabledAt == nil && enabled.failingSince == nil)
        #expect(!(try await store.setWebhookEndpoint("nobody", disabled: true, now: Fixture.time(5_000))))
    }

    static func concurrentWebhookClaimsAreDisjoint(_ store: any AccountStore) async throws {
        try await Fixture.warmUp(store)
        _ = try await queueAll(store, "backend")
        _ = try await newUsers(store, 40, at: 0)
        #expect(try await queueAll(store, "backend") == 40)
        let claims = try await withThrowingTaskGroup(of: [UUID].self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await claim(store, limit: 3, at: 1_000).map(\.id)
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        // A PostgreSQL claim may come back short when a row it saw was claimed meanwhile: the rest is claimed next.
        var all = claims
        while true {
            let more = try await claim(store, limit: 10, at: 1_000)
            if more.isEmpty { break }
            all += more.map(\.id)
        }
        #expect(all.count == 40, "every delivery is claimed")
        #expect(Set(all).count == all.count, "and none twice")
    }

    static func webhookPurgeAndDeletion(_ store: any AccountStore) async throws {
        _ = try await queueAll(store, "backend")
        let facts = Fixture.facts(email: "grace@example.com", given: "Grace", family: "Hopper")
        let old = try await store.signIn(facts, now: Fixture.time(0)).user
        let finished = try await newUsers(store, 1, at: 0)[0]
        _ = try await newUsers(store, 1, at: 100_000)
        #expect(try await queueAll(store, "backend") == 3)
        let claimed = try await claim(store, limit: 5, at: 1_000)
        let done = try #require(claimed.first { $0.event.userID == finished.id })
        #expect(try await store.recordWebhookAttempt(done.id, ok(1_500), next: .delivered))

        // The account's pending `user.created` is still to go: the deletion blanks what it names.
        _ = try await store.deleteUser(
            id: old.id,
            mode: .delete,
            appleRevocationDueAt: nil,
            by: .user,
            now: Fixture.time(2_000)
        )
        #expect(try await queueAll(store, "backend") == 1)
        let pending = try #require(
            try await store.webhookDeliveries(endpoint: "backend", state: .pending, before: nil, limit: 10)
                .first { $0.event.type == .userCreated && $0.event.userID == old.id }
        )
        #expect(pending.event.data["email"] == .null && pending.event.data["given_name"] == .null)
        #expect(pending.event.data["user_id"] == .string(old.id.description))

        // Events before the cutoff go, unless a pending delivery needs them; finished deliveries go with them.
        #expect(try await store.purgeLifecycleEvents(before: Fixture.time(50_000)) == 1)
        let kept = try await store.lifecycleEvents(after: nil, limit: 10).map(\.type)
        #expect(kept == [.userCreated, .userCreated, .userDeleted], "the finished account's event went")
        #expect(try await store.webhookDelivery(done.id) == nil)
        #expect(try await store.webhookDelivery(pending.id) != nil)
    }

    static func webhookChannels(_ store: any AccountStore) async throws {
        let relyingParty = SignInChannel(rawValue: "oidc:grafana")
        let logout = "backchannel:grafana"
        #expect(try await queueAll(store, logout, types: [.sessionEnded], channel: relyingParty) == 0)
        let user = try await newUsers(store, 1, at: 0)[0]
        let other = try await newUsers(store, 1, at: 0)[0]
        func start(_ userID: UserID, _ channel: SignInChannel?) async throws -> SessionID {
            let session = SessionID()
            try await store.createSession(
                firstToken: Fixture.refreshToken(session, userID),
                metadata: SessionMetadata(channel: channel),
                now: Fixture.time(10)
            )
            return session
        }
        let first = try await start(user.id, relyingParty)
        let second = try await start(user.id, relyingParty)
        let web = try await start(user.id, .web)
        let unrecorded = try await start(user.id, nil)
        let othersOwn = try await start(other.id, SignInChannel(rawValue: "oidc:another"))
        #expect(try await store.revokeSession(first, by: .user, reason: SessionEndReason.logout, now: Fixture.time(20)))
        _ = try await store.revokeSessions(
            userID: other.id,
            by: .operator,
            reason: SessionEndReason.admin,
            now: Fixture.time(25)
        )
        _ = try await store.deleteUser(
            id: user.id,
            mode: .delete,
            appleRevocationDueAt: nil,
            by: .user,
            now: Fixture.time(30)
        )
        #expect(try await queueAll(store, logout, types: [.sessionEnded], channel: relyingParty) == 2)
        let delivered = try await store.webhookDeliveries(endpoint: logout, state: nil, before: nil, limit: 10)
        #expect(delivered.map { $0.event.data["session_id"]?.text } == [second.description, first.description])
        #expect(delivered.map { $0.event.data["reason"]?.text } == ["account_deleted", "logout"])
        #expect(delivered.allSatisfy { $0.event.sessionChannel == relyingParty })

        let ended = try await store.lifecycleEvents(after: nil, limit: 100).filter { $0.type == .sessionEnded }
        let channels = Dictionary(
            uniqueKeysWithValues: ended.compactMap { event in event.data["session_id"]?.text.map { ($0, event) } }
        )
        #expect(channels[web.description]?.data["channel"] == .string("web"))
        #expect(channels[othersOwn.description]?.sessionChannel == SignInChannel(rawValue: "oidc:another"))
        #expect(channels[unrecorded.description].map { $0.data["channel"] == nil } == true, "no channel recorded")
    }
}
