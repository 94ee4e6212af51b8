import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of what operators do to accounts: finding them by email, disabling and enabling them.
    static let operatorChecks: [Check] = [
        Check("users(email:) finds every account with the email, ignoring case, oldest first", usersAreFoundByEmail),
        Check(
            "disableUser ends every session, marks the account changed, and its sign-ins start no session",
            disableUserEndsSessions
        ),
        Check("enableUser lets a disabled account sign in to sessions again", enableUserAllowsSignIn),
    ]

    static func usersAreFoundByEmail(_ store: any AccountStore) async throws {
        let first = try await store.signIn(Fixture.facts(email: "Shared@Example.com"), now: Fixture.time(0)).user
        let second = try await store.signIn(Fixture.facts(email: "shared@example.com"), now: Fixture.time(10)).user
        let other = try await store.signIn(Fixture.facts(email: "other@example.com"), now: Fixture.time(20)).user
        _ = try await store.signIn(Fixture.facts(), now: Fixture.time(30))

        #expect(try await store.users(email: "SHARED@example.COM").map(\.id) == [first.id, second.id])
        #expect(try await store.users(email: "other@example.com").map(\.id) == [other.id])
        #expect(try await store.users(email: "shared@example").isEmpty, "an exact match, not a prefix")
        #expect(try await store.users(email: "nobody@example.com").isEmpty)
    }

    static func disableUserEndsSessions(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(email: "d@example.com", verified: true, isPrivate: false)
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        #expect(!user.isDisabled)
        let first = Fixture.refreshToken(SessionID(), user.id)
        let second = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(10))
        try await store.createSession(firstToken: second, now: Fixture.time(20))
        #expect(try await store.revokeSession(second.sessionID, now: Fixture.time(30)))

        let disabled = try #require(try await store.disableUser(id: user.id, now: Fixture.time(100)))
        #expect(disabled.endedSessions == [first.sessionID], "only the active session ends")
        Fixture.expectSameTime(disabled.user.disabledAt, Fixture.time(100))
        let stored = try #require(try await store.user(id: user.id))
        Fixture.expectSameTime(stored.disabledAt, Fixture.time(100), "the mark is stored")
        #expect(try await store.usersChanged(since: Fixture.time(100)).contains(user.id), "other instances learn")
        #expect(
            try await store.revokedSessions(since: Fixture.time(100)).map(\.sessionID) == [first.sessionID],
            "other instances refuse the session's access tokens"
        )
        #expect(
            try await store.rotateRefreshToken(
                presentedHash: first.hash,
                next: Fixture.refreshToken(first.sessionID, user.id),
                now: Fixture.time(110)
            ) == .revoked(sessionID: first.sessionID, userID: user.id)
        )

        // Disabling again keeps the first time and ends nothing more.
        let again = try #require(try await store.disableUser(id: user.id, now: Fixture.time(200)))
        #expect(again.endedSessions.isEmpty)
        Fixture.expectSameTime(again.user.disabledAt, Fixture.time(100))

        // A returning sign-in with a session (the path the SQL stores run as one statement) starts none.
        let session = NewSession(
            sessionID: SessionID(),
            refreshTokenHash: Fixture.randomBytes(32),
            issuedAt: Fixture.time(300),
            expiresAt: Fixture.time(3_600_000)
        )
        let refused = try await store.signIn(facts, startingSession: session, now: Fixture.time(300))
        #expect(refused.user.id == user.id && refused.user.isDisabled && !refused.isNewUser)
        #expect(try await store.session(refreshTokenHash: session.refreshTokenHash) == nil, "no session was started")
        #expect(
            try await store.checkRefreshToken(presentedHash: session.refreshTokenHash, now: Fixture.time(400))
                == .notFound
        )
        #expect(try await store.disableUser(id: UserID(), now: Fixture.time(500)) == nil, "no such account")
    }

    static func enableUserAllowsSignIn(_ store: any AccountStore) async throws {
        let facts = Fixture.facts()
        let user = try await store.signIn(facts, now: Fixture.time(0)).user
        #expect(try await store.enableUser(id: user.id, now: Fixture.time(50))?.isDisabled == false, "a no-op")
        try #require(try await store.disableUser(id: user.id, now: Fixture.time(100)) != nil)

        let enabled = try #require(try await store.enableUser(id: user.id, now: Fixture.time(200)))
        #expect(enabled.disabledAt == nil)
        #expect(try await store.user(id: user.id)?.disabledAt == nil, "the mark is cleared")
        #expect(try await store.usersChanged(since: Fixture.time(200)).contains(user.id))

        let session = NewSession(
            sessionID: SessionID(),
            refreshTokenHash: Fixture.randomBytes(32),
            issuedAt: Fixture.time(300),
            expiresAt: Fixture.time(3_600_000)
        )
        _ = try await store.signIn(facts, startingSession: session, now: Fixture.time(300))
        #expect(
            try await store.checkRefreshToken(presentedHash: session.refreshTokenHash, now: Fixture.time(400))
                == .current(sessionID: session.sessionID, userID: user.id),
            "the sign-in started a session"
        )
        #expect(try await store.enableUser(id: UserID(), now: Fixture.time(500)) == nil, "no such account")
    }
}
