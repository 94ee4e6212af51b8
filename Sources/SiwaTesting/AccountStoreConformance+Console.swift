import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of what the operator console reads and does: user search, account totals, sessions with their
    /// metadata and last use, the audit log, and admin grants.
    static let consoleChecks: [Check] = [
        Check("searchUsers with no query lists everyone newest first, in pages", searchListsEveryone),
        Check(
            "searchUsers pages neither repeat nor skip an account while others are added concurrently",
            searchPagesUnderConcurrentInserts
        ),
        Check(
            "searchUsers matches siwa id, Apple sub, then email, given and family name prefixes, ignoring case",
            searchMatchesInOrder
        ),
        Check("searchUsers folds non-ASCII letters (email, names, users(email:))", searchFoldsNonASCII),
        Check("searchUsers refuses a cursor of another query or listing", searchRefusesForeignCursors),
        Check("accountTotals counts accounts and recent ones, not anonymised ones", accountTotalsCount),
        Check(
            "a sign-in with a session records its metadata, the last sign-in and its audit events",
            signInRecordsMetadataAndEvents
        ),
        Check(
            "sessions(userID:) lists active sessions first, then ended ones, with their last use",
            sessionsAreListedWithLastUse
        ),
        Check("audit events are filtered by user, types and time, newest first", auditEventsAreFiltered),
        Check(
            "audit log pages neither repeat nor skip an event while others are appended concurrently",
            auditPagesUnderConcurrentAppends
        ),
        Check("appendAuditEvent keeps ids unique and cuts long texts", auditEventsAreLimited),
        Check("purgeAuditEvents deletes the events before the date", auditEventsArePurged),
        Check("auditEventCounts counts by day, type, channel and reason", auditEventsAreCounted),
        Check("grantAdmin and revokeAdmin change a grant once each and record it", adminGrantsAreKept),
    ]

    // MARK: User search

    static func searchListsEveryone(_ store: any AccountStore) async throws {
        #expect(try await store.searchUsers("", limit: 10, after: nil) == Page(items: [], next: nil))
        var created: [UserRecord] = []
        for index in 0..<7 {
            // Two accounts per creation time: the id orders them.
            let facts = Fixture.facts(email: "e\(index)@example.com")
            created.append(try await store.signIn(facts, now: Fixture.time(Int64(index / 2) * 1_000)).user)
        }
        let expected = created.sorted { first, second in
            UserSearchPlan.precedes(Self.everyoneKey(first), Self.everyoneKey(second), in: .everyone)
        }.map(\.id)
        let pages = try await Self.allPages(store, query: "  ", limit: 3)
        #expect(pages.map(\.count) == [3, 3, 1])
        #expect(pages.flatMap { $0 }.map(\.id) == expected, "newest first, then by id")
        let whole = try await store.searchUsers("", limit: 7, after: nil)
        #expect(whole.next == nil, "a page that holds the rest has no next page")
        #expect(try await store.searchUsers("", limit: 0, after: nil).items.isEmpty)
    }

    static func searchPagesUnderConcurrentInserts(_ store: any AccountStore) async throws {
        var before: [UserID] = []
        for index in 0..<30 {
            let facts = Fixture.facts(email: "user\(index)@example.com", given: "Una")
            before.append(try await store.signIn(facts, now: Fixture.time(Int64(index % 10) * 1_000)).user.id)
        }
        // While pages are read, more accounts arrive, with creation times before, among and after the others'.
        for query in ["", "user", "una"] {
            async let inserting: Void = {
                for index in 0..<30 {
                    let facts = Fixture.facts(email: "user-late\(index)@example.com", given: "Una")
                    _ = try await store.signIn(facts, now: Fixture.time(Int64(index % 12) * 1_000 - 500))
                }
            }()
            let seen = try await Self.allPages { try await store.searchUsers(query, limit: 4, after: $0) }.flatMap {
                $0
            }
            try await inserting
            let ids = seen.map(\.id)
            #expect(Set(ids).count == ids.count, "no account is answered twice (query '\(query)')")
            #expect(Set(before).isSubset(of: Set(ids)), "every account that existed throughout is answered")
            let plan = try UserSearchPlan(query: query, cursor: nil)
            for (first, second) in zip(seen, seen.dropFirst()) {
                let step = try #require(plan.firstStep(matching: first))
                let nextStep = try #require(plan.firstStep(matching: second))
                if step == nextStep {
                    let firstKey = (plan.sortKey(of: first, in: step) ?? "", first.id.description)
                    let secondKey = (plan.sortKey(of: second, in: step) ?? "", second.id.description)
                    #expect(UserSearchPlan.precedes(firstKey, secondKey, in: step), "pages keep the search's order")
                } else {
                    #expect(step < nextStep, "the steps come in order")
                }
            }
        }
    }

    static func searchMatchesInOrder(_ store: any AccountStore) async throws {
        func user(
            _ email: String?,
            given: String? = nil,
            family: String? = nil,
            at time: Int64
        ) async throws
            -> UserRecord
        {
            try await store.signIn(Fixture.facts(email: email, given: given, family: family), now: Fixture.time(time))
                .user
        }
        let annaB = try await user("anna.b@example.com", given: "Zoe", at: 0)
        let ann = try await user("Ann@Example.com", given: "Ann", at: 1)
        let anne = try await user("x@example.com", given: "ANNE", at: 2)
        let annan = try await user("y@example.com", given: "Kofi", family: "Annan", at: 3)
        let annie = try await user(nil, given: "Annie", at: 4)
        _ = try await user("bob@example.com", given: "Bob", family: "Bann", at: 5)

        let found = try await store.searchUsers("AnN", limit: 50, after: nil)
        #expect(
            found.items.map(\.id) == [ann.id, annaB.id, anne.id, annie.id, annan.id],
            "emails by key, then given names, then family names; each account once, at its first match"
        )
        #expect(found.next == nil)
        let paged = try await Self.allPages(store, query: "ann", limit: 2)
        #expect(paged.flatMap { $0 }.map(\.id) == found.items.map(\.id), "pages across the steps")
        #expect(paged.map(\.count) == [2, 2, 1])

        #expect(try await store.searchUsers("ann@example.com", limit: 50, after: nil).items.map(\.id) == [ann.id])
        #expect(try await store.searchUsers("ann@example.co", limit: 50, after: nil).items.map(\.id) == [ann.id])
        #expect(try await store.searchUsers("nn", limit: 50, after: nil).items.isEmpty, "a prefix, not a substring")

        let byID = try await store.searchUsers(" \(anne.id.description.uppercased()) ", limit: 50, after: nil)
        #expect(byID.items.map(\.id) == [anne.id], "the siwa id, in any case")
        let bySub = try await store.searchUsers(annan.appleUserID.rawValue, limit: 50, after: nil)
        #expect(bySub.items.map(\.id) == [annan.id], "the Apple sub, exactly")
        let subPrefix = String(annan.appleUserID.rawValue.dropLast())
        #expect(try await store.searchUsers(subPrefix, limit: 50, after: nil).items.isEmpty, "a sub is not a prefix")
        Fixture.expectSameUser(try #require(bySub.items.first), annan)
    }

    static func searchFoldsNonASCII(_ store: any AccountStore) async throws {
        let elodie = try await store.signIn(
            Fixture.facts(email: "Élodie.Dupré@Exemple.fr", given: "Élodie", family: "Dupré"),
            now: Fixture.time(0)
        ).user
        let olaf = try await store.signIn(Fixture.facts(given: "Ølaf", family: "ÅSE"), now: Fixture.time(1)).user
        _ = try await store.signIn(Fixture.facts(email: "elodie@example.com"), now: Fixture.time(2))

        #expect(try await store.searchUsers("ÉLODIE.D", limit: 10, after: nil).items.map(\.id) == [elodie.id])
        #expect(
            try await store.searchUsers("élodie.dupré@exemple.fr", limit: 10, after: nil).items.map(\.id) == [elodie.id]
        )
        #expect(try await store.searchUsers("øL", limit: 10, after: nil).items.map(\.id) == [olaf.id])
        #expect(try await store.searchUsers("åse", limit: 10, after: nil).items.map(\.id) == [olaf.id])
        #expect(try await store.searchUsers("dupr", limit: 10, after: nil).items.map(\.id) == [elodie.id])
        #expect(
            try await store.users(email: "ÉLODIE.DUPRÉ@EXEMPLE.FR").map(\.id) == [elodie.id],
            "users(email:) ignores the case of every letter"
        )
    }

    static func searchRefusesForeignCursors(_ store: any AccountStore) async throws {
        for index in 0..<3 {
            _ = try await store.signIn(Fixture.facts(email: "c\(index)@example.com"), now: Fixture.time(Int64(index)))
        }
        let cursor = try #require(try await store.searchUsers("c", limit: 1, after: nil).next)
        let text = try #require(PageCursor(cursor.description), "a cursor's text reads back")
        #expect(text == cursor)
        #expect(try await store.searchUsers("c", limit: 1, after: text).items.count == 1)
        await #expect(throws: StoreError.invalidInput, "a cursor of another query") {
            try await store.searchUsers("d", limit: 1, after: cursor)
        }
        await #expect(throws: StoreError.invalidInput, "a search cursor for the audit log") {
            try await store.auditEvents(AuditEventFilter(), limit: 1, after: cursor)
        }
        await #expect(throws: StoreError.invalidInput, "a made-up cursor") {
            try await store.searchUsers("c", limit: 1, after: PageCursor(parts: ["users", "c", "99", "", ""]))
        }
        #expect(PageCursor("not base64!") == nil)
    }

    static func accountTotalsCount(_ store: any AccountStore) async throws {
        var users: [UserRecord] = []
        for index in 0..<5 {
            users.append(try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index) * 1_000)).user)
        }
        _ = try await store.deleteUser(
            id: users[4].id,
            mode: .anonymise,
            appleRevocationDueAt: nil,
            now: Fixture.time(9)
        )
        _ = try await store.deleteUser(id: users[0].id, mode: .delete, appleRevocationDueAt: nil, now: Fixture.time(9))
        let totals = try await store.accountTotals(createdSince: [Fixture.time(2_000), Fixture.time(10_000)])
        #expect(totals.total == 3, "deleted and anonymised accounts are not counted")
        #expect(totals.createdSince[Fixture.time(2_000)] == 2)
        #expect(totals.createdSince[Fixture.time(10_000)] == 0)
        let anonymised = try #require(try await store.user(id: users[4].id))
        #expect(anonymised.status == .deleted)
        let listed = try await store.searchUsers("", limit: 10, after: nil).items
        #expect(listed.first(where: { $0.id == anonymised.id })?.status == .deleted, "listed, as deleted")
    }

    // MARK: Sessions and sign-in records

    static func signInRecordsMetadataAndEvents(_ store: any AccountStore) async throws {
        let longAgent = String(repeating: "Mozilla/5.0 ", count: 60)
        func session(_ channel: SignInChannel, _ time: Int64) -> NewSession {
            NewSession(
                sessionID: SessionID(),
                refreshTokenHash: Fixture.randomBytes(32),
                issuedAt: Fixture.time(time),
                expiresAt: Fixture.time(time + 3_600_000),
                metadata: SessionMetadata(channel: channel, userAgent: longAgent, clientAddress: "2001:db8::7")
            )
        }
        let facts = Fixture.facts(email: "m@example.com")
        let first = session(.web, 0)
        let created = try await store.signIn(facts, startingSession: first, now: Fixture.time(0))
        #expect(created.isNewUser)
        Fixture.expectSameTime(created.user.lastSignInAt, Fixture.time(0), "a new account's sign-in is its last")
        let user = created.user

        let log = try await store.auditEvents(AuditEventFilter(userID: user.id), limit: 10, after: nil).items
        #expect(Set(log.map(\.type)) == [.accountCreated, .signIn], "the store recorded the creation and the sign-in")
        let signIn = try #require(log.first { $0.type == .signIn })
        #expect(signIn.actor == .user && signIn.channel == .web && signIn.clientID == facts.clientID)
        #expect(signIn.sessionID == first.sessionID && signIn.details == ["account": "new"])
        Fixture.expectSameTime(signIn.time, Fixture.time(0))

        // A returning sign-in (the SQL stores' single-statement path) two minutes later moves the last sign-in but
        // not updatedAt; one 30 s after that is within the resolution and moves nothing.
        let second = session(.serviceStack, 120_000)
        let returning = try await store.signIn(facts, startingSession: second, now: Fixture.time(120_000)).user
        Fixture.expectSameTime(returning.lastSignInAt, Fixture.time(120_000))
        Fixture.expectSameTime(returning.updatedAt, Fixture.time(0), "the last sign-in alone is no change")
        #expect(try await store.usersChanged(since: Fixture.time(1)).isEmpty, "user caches are not refreshed for it")
        let third = session(.native, 150_000)
        let soon = try await store.signIn(facts, startingSession: third, now: Fixture.time(150_000)).user
        Fixture.expectSameTime(soon.lastSignInAt, Fixture.time(120_000), "within the resolution")
        Fixture.expectSameTime(try await store.user(id: user.id)?.lastSignInAt, Fixture.time(120_000))

        let returningEvents = try await store.auditEvents(
            AuditEventFilter(userID: user.id, types: [.signIn], since: Fixture.time(1)),
            limit: 10,
            after: nil
        ).items
        #expect(returningEvents.map(\.sessionID) == [third.sessionID, second.sessionID], "newest first")
        #expect(returningEvents.map(\.channel) == [.native, .serviceStack])
        #expect(returningEvents.allSatisfy { $0.details == ["account": "returning"] && $0.actor == .user })

        let sessions = try await store.sessions(userID: user.id, now: Fixture.time(200_000), limit: 10)
        #expect(sessions.map(\.id) == [third.sessionID, second.sessionID, first.sessionID])
        let listed = try #require(sessions.last)
        #expect(listed.metadata.channel == .web)
        #expect(listed.metadata.clientAddress == "2001:db8::7")
        #expect(listed.metadata.userAgent?.unicodeScalars.count == SessionMetadata.maxUserAgentLength, "cut")
        #expect(longAgent.hasPrefix(listed.metadata.userAgent ?? "-"))
        Fixture.expectSameTime(listed.createdAt, Fixture.time(0))
        Fixture.expectSameTime(listed.expiresAt, Fixture.time(3_600_000))
        #expect(listed.lastUsedAt == nil && listed.revokedAt == nil, "never used, not revoked")

        // A disabled account's refused sign-in is no sign-in: nothing recorded.
        _ = try await store.disableUser(id: user.id, now: Fixture.time(300_000))
        let refused = try await store.signIn(facts, startingSession: session(.web, 400_000), now: Fixture.time(400_000))
        Fixture.expectSameTime(refused.user.lastSignInAt, Fixture.time(120_000))
        let after = try await store.auditEvents(
            AuditEventFilter(userID: user.id, since: Fixture.time(300_000)),
            limit: 10,
            after: nil
        )
        #expect(after.items.isEmpty, "no event for a refused sign-in (its caller records the refusal)")

        // createSession keeps metadata too.
        let other = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let token = Fixture.refreshToken(SessionID(), other.id)
        let metadata = SessionMetadata(channel: .rentManager, userAgent: "RM/1.0", clientAddress: "192.0.2.1")
        try await store.createSession(firstToken: token, metadata: metadata, now: Fixture.time(5))
        #expect(
            try await store.sessions(userID: other.id, now: Fixture.time(6), limit: 5).map(\.metadata) == [metadata]
        )
    }

    static func sessionsAreListedWithLastUse(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        func start(at time: Int64, expiresAt: Int64 = 3_600_000) async throws -> RefreshTokenRecord {
            let token = Fixture.refreshToken(
                SessionID(),
                user.id,
                issuedAt: Fixture.time(time),
                expiresAt: Fixture.time(expiresAt)
            )
            try await store.createSession(firstToken: token, now: Fixture.time(time))
            return token
        }
        let rotating = try await start(at: 1_000)
        let checked = try await start(at: 2_000)
        let expired = try await start(at: 500, expiresAt: 3_000)
        let revoked = try await start(at: 4_000)
        let older = try await start(at: 100)
        #expect(try await store.revokeSession(revoked.sessionID, now: Fixture.time(5_000)))

        let next = Fixture.refreshToken(rotating.sessionID, user.id)
        #expect(
            try await store.rotateRefreshToken(presentedHash: rotating.hash, next: next, now: Fixture.time(6_000))
                == .rotated(sessionID: rotating.sessionID, userID: user.id)
        )
        for (time, recorded) in [(7_000, 7_000), (30_000, 7_000), (67_000, 67_000)] as [(Int64, Int64)] {
            #expect(
                try await store.checkRefreshToken(presentedHash: checked.hash, now: Fixture.time(time))
                    == .current(sessionID: checked.sessionID, userID: user.id)
            )
            let listed = try await store.sessions(userID: user.id, now: Fixture.time(time), limit: 10)
            let record = try #require(listed.first { $0.id == checked.sessionID })
            Fixture.expectSameTime(record.lastUsedAt, Fixture.time(recorded), "a check records its use per minute")
        }

        let listed = try await store.sessions(userID: user.id, now: Fixture.time(100_000), limit: 10)
        #expect(
            listed.map(\.id)
                == [checked.sessionID, rotating.sessionID, older.sessionID, revoked.sessionID, expired.sessionID],
            "active newest first, then ended, the latest end first"
        )
        #expect(listed.prefix(3).allSatisfy { $0.isActive(at: Fixture.time(100_000)) })
        let rotated = try #require(listed.first { $0.id == rotating.sessionID })
        Fixture.expectSameTime(rotated.lastUsedAt, Fixture.time(6_000), "a rotation is the session's last use")
        Fixture.expectSameTime(rotated.expiresAt, next.expiresAt)
        let ended = try #require(listed.first { $0.id == revoked.sessionID })
        Fixture.expectSameTime(ended.revokedAt, Fixture.time(5_000))
        Fixture.expectSameTime(ended.endedAt(now: Fixture.time(100_000)), Fixture.time(5_000))
        Fixture.expectSameTime(listed.last?.endedAt(now: Fixture.time(100_000)), Fixture.time(3_000))
        #expect(
            try await store.sessions(userID: user.id, now: Fixture.time(100_000), limit: 2).map(\.id)
                == [checked.sessionID, rotating.sessionID]
        )
        #expect(try await store.sessions(userID: UserID(), now: Fixture.time(0), limit: 10).isEmpty)
    }

    // MARK: Audit log

    static func auditEventsAreFiltered(_ store: any AccountStore) async throws {
        let ann = UserID()
        let bob = UserID()
        let admin = try #require(AdminSubject("001122.admin.3344"))
        let events = [
            AuditEvent(time: Fixture.time(1_000), type: .signInRefused, actor: .system, reason: "nonce"),
            AuditEvent(time: Fixture.time(2_000), type: .accountDisabled, userID: ann, actor: .admin(admin)),
            AuditEvent(
                time: Fixture.time(3_000),
                type: .sessionEnded,
                userID: ann,
                actor: .user,
                sessionID: SessionID()
            ),
            AuditEvent(time: Fixture.time(3_000), type: .refreshTokenReuse, userID: bob, actor: .system),
            AuditEvent(
                time: Fixture.time(4_000),
                type: .appleNotificationIgnored,
                userID: bob,
                actor: .apple,
                reason: "stale",
                details: ["type": "email-disabled"]
            ),
            AuditEvent(time: Fixture.time(5_000), type: .accountEnabled, userID: ann, actor: .operator),
        ]
        for event in events.shuffled() { try await store.appendAuditEvent(event) }
        func listed(_ filter: AuditEventFilter) async throws -> [UUID] {
            try await store.auditEvents(filter, limit: 50, after: nil).items.map(\.id)
        }
        let newestFirst = events.sorted {
            AuditLogPosition.precedes((Fixture.milliseconds($0.time), $0.id), (Fixture.milliseconds($1.time), $1.id))
        }
        #expect(try await listed(AuditEventFilter()) == newestFirst.map(\.id))
        #expect(try await listed(AuditEventFilter(userID: ann)) == [events[5].id, events[2].id, events[1].id])
        #expect(
            try await listed(AuditEventFilter(types: [.refreshTokenReuse, .signInRefused, .accountEnabled]))
                == [events[5].id, events[3].id, events[0].id]
        )
        #expect(try await listed(AuditEventFilter(userID: bob, types: [.appleNotificationIgnored])) == [events[4].id])
        #expect(
            try await listed(AuditEventFilter(since: Fixture.time(2_000), until: Fixture.time(4_000)))
                == newestFirst.filter {
                    (2_000...3_000).contains(Fixture.milliseconds($0.time) - Fixture.baseMilliseconds)
                }
                .map(\.id),
            "since is inclusive, until exclusive"
        )
        #expect(try await listed(AuditEventFilter(types: [])).isEmpty)
        let stored = try await store.auditEvents(AuditEventFilter(userID: bob), limit: 50, after: nil).items
        #expect(stored.first == events[4], "every field reads back")
        let byAdmin = try await store.auditEvents(AuditEventFilter(types: [.accountDisabled]), limit: 5, after: nil)
        #expect(byAdmin.items.map(\.actor) == [.admin(admin)])
        #expect(byAdmin.next == nil)
    }

    static func auditPagesUnderConcurrentAppends(_ store: any AccountStore) async throws {
        let user = UserID()
        var before: [AuditEvent] = []
        for index in 0..<40 {
            // Several events per millisecond: the id orders them.
            let event = AuditEvent(
                time: Fixture.time(Int64(index / 3) * 100),
                type: index.isMultiple(of: 2) ? .signIn : .sessionEnded,
                userID: user,
                actor: .user
            )
            try await store.appendAuditEvent(event)
            before.append(event)
        }
        for filter in [
            AuditEventFilter(), AuditEventFilter(userID: user), AuditEventFilter(types: [.signIn, .sessionEnded]),
        ] {
            async let appending: Void = {
                for index in 0..<30 {
                    let time = Fixture.time(Int64(index % 16) * 100 - 50)
                    try await store.appendAuditEvent(AuditEvent(time: time, type: .signIn, userID: user, actor: .user))
                }
            }()
            let seen = try await Self.allPages { try await store.auditEvents(filter, limit: 7, after: $0) }.flatMap {
                $0
            }
            try await appending
            #expect(Set(seen.map(\.id)).count == seen.count, "no event is answered twice")
            #expect(Set(before.map(\.id)).isSubset(of: Set(seen.map(\.id))), "every earlier event is answered")
            for (first, second) in zip(seen, seen.dropFirst()) {
                #expect(
                    AuditLogPosition.precedes(
                        (Fixture.milliseconds(first.time), first.id),
                        (Fixture.milliseconds(second.time), second.id)
                    ),
                    "newest first"
                )
            }
        }
    }

    static func auditEventsAreLimited(_ store: any AccountStore) async throws {
        let event = AuditEvent(
            time: Fixture.time(0),
            type: .signInRefused,
            actor: .system,
            reason: String(repeating: "r", count: 2_000),
            details: Dictionary(uniqueKeysWithValues: (0..<40).map { ($0 < 10 ? "k0\($0)" : "k\($0)", "v\($0)") })
        )
        try await store.appendAuditEvent(event)
        await #expect(throws: StoreError.duplicate, "an event id is stored once") {
            try await store.appendAuditEvent(event)
        }
        let stored = try #require(try await store.auditEvents(AuditEventFilter(), limit: 5, after: nil).items.first)
        #expect(stored.reason?.count == AuditEvent.maxTextLength)
        #expect(stored.details.count == AuditEvent.maxDetails)
        #expect(stored.details["k00"] == "v0" && stored.details["k39"] == nil, "the first keys are kept")
        #expect(stored == event.limited())
    }

    static func auditEventsArePurged(_ store: any AccountStore) async throws {
        for index in 0..<25 {
            let type: AuditEventType = index.isMultiple(of: 2) ? .signIn : .accountCreated
            try await store.appendAuditEvent(
                AuditEvent(time: Fixture.time(Int64(index) * 1_000), type: type, actor: .user)
            )
        }
        #expect(try await store.purgeAuditEvents(before: Fixture.time(10_000)) == 10, "the 10 events before it")
        #expect(try await store.purgeAuditEvents(before: Fixture.time(10_000)) == 0)
        let left = try await store.auditEvents(AuditEventFilter(), limit: 100, after: nil).items
        #expect(left.count == 15)
        #expect(left.allSatisfy { Fixture.milliseconds($0.time) >= Fixture.milliseconds(Fixture.time(10_000)) })
    }

    static func auditEventsAreCounted(_ store: any AccountStore) async throws {
        let day: Int64 = 86_400_000
        // The fixture's base time is 2026-01-01 00:00:00.123 UTC: day 0 starts 123 ms before it.
        let (dayStart, secondDay) = (Fixture.time(-123), Fixture.time(day - 123))
        func event(
            _ time: Int64,
            _ type: AuditEventType,
            channel: SignInChannel? = nil,
            reason: String? = nil
        )
            -> AuditEvent
        {
            AuditEvent(time: Fixture.time(time), type: type, actor: .user, channel: channel, reason: reason)
        }
        let events = [
            event(0, .signIn, channel: .native), event(1_000, .signIn, channel: .native),
            event(2_000, .signIn, channel: .web), event(day - 124, .signIn, channel: .web),
            event(day, .signIn, channel: .web), event(5, .signInRefused, reason: "nonce"),
            event(6, .signInRefused, reason: "expired"), event(day + 7, .signInRefused, reason: "nonce"),
            event(8, .accountCreated), event(2 * day, .signIn, channel: .native),
        ]
        for event in events { try await store.appendAuditEvent(event) }
        func counts(now: Int64) async throws -> [AuditEventCount] {
            // The whole days that overlap the range: days 0 and 1.
            try await store.auditEventCounts(
                from: dayStart.addingTimeInterval(3_600),
                until: Fixture.time(2 * day - 124),
                types: [.signIn, .signInRefused],
                now: Fixture.time(now)
            )
        }
        func expected(web: Int, nonce: Int) -> [AuditEventCount] {
            [
                AuditEventCount(day: dayStart, type: .signIn, channel: .native, reason: nil, count: 2),
                AuditEventCount(day: dayStart, type: .signIn, channel: .web, reason: nil, count: 2),
                AuditEventCount(day: dayStart, type: .signInRefused, channel: nil, reason: "expired", count: 1),
                AuditEventCount(day: dayStart, type: .signInRefused, channel: nil, reason: "nonce", count: 1),
                AuditEventCount(day: secondDay, type: .signIn, channel: .web, reason: nil, count: web),
                AuditEventCount(day: secondDay, type: .signInRefused, channel: nil, reason: "nonce", count: nonce),
            ]
        }
        // Day 0 is settled (it ended more than an hour ago), day 1 is not: day 0 is counted once and kept.
        let dayOneOpen = 2 * day + 600_000
        #expect(try await counts(now: dayOneOpen) == expected(web: 1, nonce: 1))
        try await store.appendAuditEvent(event(500, .signIn, channel: .native))
        try await store.appendAuditEvent(event(day + 9, .signIn, channel: .web))
        #expect(
            try await counts(now: dayOneOpen) == expected(web: 2, nonce: 1),
            "a settled day's counts are kept; an open day is counted anew"
        )
        // Once day 1 is settled it is counted once too.
        let dayOneSettled = 3 * day
        #expect(try await counts(now: dayOneSettled) == expected(web: 2, nonce: 1))
        try await store.appendAuditEvent(event(day + 10, .signInRefused, reason: "nonce"))
        #expect(try await counts(now: dayOneSettled) == expected(web: 2, nonce: 1))
        #expect(
            try await store.auditEventCounts(from: dayStart, until: secondDay, types: [], now: Fixture.time(0))
                .isEmpty
        )
        #expect(
            try await store.auditEventCounts(from: secondDay, until: secondDay, types: [.signIn], now: Fixture.time(0))
                .isEmpty,
            "an empty range"
        )

        // Purging the events before day 1 drops day 0's kept counts too.
        #expect(try await store.purgeAuditEvents(before: secondDay) == 8)
        #expect(try await counts(now: dayOneSettled) == Array(expected(web: 2, nonce: 1).suffix(2)))
    }

    // MARK: Admin grants

    static func adminGrantsAreKept(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let byID = AdminSubject(user.id)
        let bySub = AdminSubject(user.appleUserID)
        #expect(try await store.adminGrants().isEmpty)
        #expect(!(try await store.isAdmin(byID)))

        #expect(try await store.grantAdmin(byID, by: .operator, now: Fixture.time(1_000)))
        #expect(!(try await store.grantAdmin(byID, by: .admin(bySub), now: Fixture.time(2_000))), "granted once")
        #expect(try await store.grantAdmin(bySub, by: .admin(byID), now: Fixture.time(3_000)))
        #expect(try await store.isAdmin(byID))
        #expect(try await store.isAdmin(AdminSubject(user.id.description.uppercased()) ?? bySub), "any case")
        #expect(!(try await store.isAdmin(AdminSubject(UserID()))))
        let grants = try await store.adminGrants()
        #expect(grants.map(\.subject) == [byID, bySub], "oldest first")
        #expect(grants.map(\.grantedBy) == [.operator, .admin(byID)])
        Fixture.expectSameTime(grants.first?.grantedAt, Fixture.time(1_000))

        #expect(try await store.revokeAdmin(byID, by: .admin(bySub), now: Fixture.time(4_000)))
        #expect(!(try await store.revokeAdmin(byID, by: .operator, now: Fixture.time(5_000))), "revoked once")
        #expect(!(try await store.isAdmin(byID)))
        #expect(try await store.adminGrants().map(\.subject) == [bySub])

        let log = try await store.auditEvents(
            AuditEventFilter(types: [.adminGranted, .adminRevoked]),
            limit: 10,
            after: nil
        ).items
        #expect(log.map(\.type) == [.adminRevoked, .adminGranted, .adminGranted], "each change once, newest first")
        #expect(
            log.map(\.details) == [["subject": byID.rawValue], ["subject": bySub.rawValue], ["subject": byID.rawValue]]
        )
        #expect(log.map(\.actor) == [.admin(bySub), .admin(byID), .operator])
        #expect(log.first?.userID == user.id, "a grant by siwa id names the account")
        #expect(AdminSubject("") == nil && AdminSubject("a b") == nil && AdminSubject("x\n") == nil)
    }

    // MARK: Helpers

    /// Every page of a search, following the cursors.
    private static func allPages(_ store: any AccountStore, query: String, limit: Int) async throws -> [[UserRecord]] {
        try await allPages { try await store.searchUsers(query, limit: limit, after: $0) }
    }

    /// Every page of a listing, following the cursors (100 at most), letting other tasks run between pages.
    private static func allPages<Item>(_ page: (PageCursor?) async throws -> Page<Item>) async throws -> [[Item]] {
        var pages: [[Item]] = []
        var cursor: PageCursor?
        repeat {
            let next = try await page(cursor)
            pages.append(next.items)
            cursor = next.next
            await Task.yield()
        } while cursor != nil && pages.count < 100
        return pages
    }

    private static func everyoneKey(_ user: UserRecord) -> (key: String, id: String) {
        (String(Fixture.milliseconds(user.createdAt)), user.id.description)
    }
}
