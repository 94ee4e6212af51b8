import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of the OpenID provider's authorization codes: single use, atomic, a replay ends what the first
    /// redemption started, expiry, and what account deletion and housekeeping do to them.
    static let authorizationCodeChecks: [Check] = [
        Check(
            "an authorization code redeems once into a session; a replay revokes that session",
            authorizationCodeRedeemsOnce
        ),
        Check("10 concurrent redemptions of one authorization code redeem it once", concurrentCodeRedemptions),
        Check(
            "an expired or unknown authorization code is not redeemed and starts no session",
            expiredAuthorizationCodeIsRefused
        ),
        Check(
            "deleting the account deletes its authorization codes; purgeExpired removes old ones",
            authorizationCodesGoWithTheAccount
        ),
        Check(
            "a client consent is kept per user and client, replaced by the next, and goes with the account",
            clientConsentsArePerUserAndClient
        ),
    ]

    static func authorizationCode(
        _ userID: UserID,
        createdAt: Date = Fixture.time(0),
        lifetime: Int64 = 60_000
    ) -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: Fixture.randomBytes(32),
            clientID: "rp.example",
            redirectURI: "https://rp.example.com/callback?x=1",
            scope: "openid email offline_access",
            codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            nonce: "n-0S6_WzA2Mj",
            userID: userID,
            browserSessionID: SessionID(),
            authTime: Fixture.time(-5_000),
            createdAt: createdAt,
            expiresAt: createdAt.addingTimeInterval(Double(lifetime) / 1_000)
        )
    }

    static func newSession(_ channel: String = "oidc:rp.example") -> NewSession {
        NewSession(
            sessionID: SessionID(),
            refreshTokenHash: Fixture.randomBytes(32),
            issuedAt: Fixture.time(1_000),
            expiresAt: Fixture.time(3_600_000),
            metadata: SessionMetadata(channel: SignInChannel(rawValue: channel), userAgent: "RP/1")
        )
    }

    static func authorizationCodeRedeemsOnce(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let code = authorizationCode(user.id)
        try await store.saveAuthorizationCode(code)
        await #expect(throws: StoreError.duplicate, "a code hash is unique") {
            try await store.saveAuthorizationCode(code)
        }
        await #expect(throws: StoreError.notFound, "a code needs its user") {
            try await store.saveAuthorizationCode(authorizationCode(UserID()))
        }

        let stored = try #require(try await store.authorizationCode(codeHash: code.codeHash))
        #expect(stored.clientID == code.clientID && stored.redirectURI == code.redirectURI)
        #expect(stored.scope == code.scope && stored.codeChallenge == code.codeChallenge && stored.nonce == code.nonce)
        #expect(stored.userID == user.id && stored.browserSessionID == code.browserSessionID)
        Fixture.expectSameTime(stored.authTime, code.authTime)
        Fixture.expectSameTime(stored.expiresAt, code.expiresAt)
        #expect(stored.redeemedAt == nil && stored.issuedSessionID == nil)
        #expect(try await store.authorizationCode(codeHash: Fixture.randomBytes(32)) == nil)

        let session = newSession()
        guard
            case .redeemed(let redeemed) = try await store.redeemAuthorizationCode(
                codeHash: code.codeHash,
                startingSession: session,
                now: Fixture.time(1_000)
            )
        else {
            Issue.record("the code was not redeemed")
            return
        }
        #expect(redeemed.userID == user.id && redeemed.issuedSessionID == session.sessionID)
        Fixture.expectSameTime(redeemed.redeemedAt ?? .distantPast, Fixture.time(1_000))
        #expect(
            try await store.checkRefreshToken(presentedHash: session.refreshTokenHash, now: Fixture.time(2_000))
                == .current(sessionID: session.sessionID, userID: user.id),
            "the redemption started the session with its first refresh token, for the code's user"
        )
        let listed = try await store.sessions(userID: user.id, now: Fixture.time(2_000), limit: 10)
        #expect(listed.map(\.id) == [session.sessionID] && listed.first?.metadata == session.metadata)

        // The replay, within the code's lifetime and after it: the first redemption's session ends, once.
        let replay = try await store.redeemAuthorizationCode(
            codeHash: code.codeHash,
            startingSession: newSession(),
            now: Fixture.time(3_000)
        )
        guard case .replayed(let replayed, let ended) = replay else {
            Issue.record("a second redemption was not a replay: \(replay)")
            return
        }
        #expect(ended == session.sessionID && replayed.issuedSessionID == session.sessionID)
        #expect(
            try await store.checkRefreshToken(presentedHash: session.refreshTokenHash, now: Fixture.time(4_000))
                == .revoked(sessionID: session.sessionID, userID: user.id)
        )
        #expect(try await store.revokedSessions(since: Fixture.time(0)).map(\.sessionID) == [session.sessionID])
        guard
            case .replayed(_, let endedAgain) = try await store.redeemAuthorizationCode(
                codeHash: code.codeHash,
                startingSession: newSession(),
                now: Fixture.time(120_000)
            )
        else {
            Issue.record("a late replay was not a replay")
            return
        }
        #expect(endedAgain == nil, "the session had already ended")
        #expect(try await store.sessions(userID: user.id, now: Fixture.time(4_000), limit: 10).count == 1)
    }

    static func concurrentCodeRedemptions(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let code = authorizationCode(user.id)
        try await store.saveAuthorizationCode(code)
        try await Fixture.warmUp(store)
        let outcomes = try await withThrowingTaskGroup(of: AuthorizationCodeOutcome.self) { group in
            for attempt in 0..<10 {
                group.addTask {
                    try await store.redeemAuthorizationCode(
                        codeHash: code.codeHash,
                        startingSession: newSession(),
                        now: Fixture.time(1_000 + Int64(attempt))
                    )
                }
            }
            return try await group.reduce(into: [AuthorizationCodeOutcome]()) { $0.append($1) }
        }
        let redeemed = outcomes.compactMap { outcome -> AuthorizationCodeRecord? in
            if case .redeemed(let record) = outcome { return record }
            return nil
        }
        let replays = outcomes.filter { if case .replayed = $0 { true } else { false } }
        #expect(redeemed.count == 1, "exactly one concurrent redemption wins")
        #expect(replays.count == 9, "the others are replays")
        let sessions = try await store.sessions(userID: user.id, now: Fixture.time(2_000), limit: 20)
        #expect(sessions.count == 1, "one session was started")
        #expect(sessions.first?.id == redeemed.first?.issuedSessionID)
        #expect(sessions.first?.revokedAt != nil, "the replays ended it")
    }

    static func expiredAuthorizationCodeIsRefused(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let code = authorizationCode(user.id)
        try await store.saveAuthorizationCode(code)
        let session = newSession()
        #expect(
            try await store.redeemAuthorizationCode(
                codeHash: code.codeHash,
                startingSession: session,
                now: Fixture.time(60_000)
            ) == .expired,
            "a code is expired at its expiry"
        )
        #expect(
            try await store.redeemAuthorizationCode(
                codeHash: Fixture.randomBytes(32),
                startingSession: session,
                now: Fixture.time(1_000)
            ) == .notFound
        )
        #expect(try await store.sessions(userID: user.id, now: Fixture.time(1_000), limit: 10).isEmpty)
        #expect(try await store.session(refreshTokenHash: session.refreshTokenHash) == nil)
        #expect(try await store.authorizationCode(codeHash: code.codeHash)?.redeemedAt == nil)
    }

    static func authorizationCodesGoWithTheAccount(_ store: any AccountStore) async throws {
        let gone = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let anonymised = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let kept = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let goneCode = authorizationCode(gone.id)
        let anonymisedCode = authorizationCode(anonymised.id)
        let oldCode = authorizationCode(kept.id)
        let liveCode = authorizationCode(kept.id, createdAt: Fixture.time(9 * 86_400_000))
        for code in [goneCode, anonymisedCode, oldCode, liveCode] { try await store.saveAuthorizationCode(code) }
        _ = try await store.deleteUser(id: gone.id, mode: .delete, appleRevocationDueAt: nil, now: Fixture.time(1))
        _ = try await store.deleteUser(
            id: anonymised.id,
            mode: .anonymise,
            appleRevocationDueAt: nil,
            now: Fixture.time(1)
        )
        #expect(try await store.authorizationCode(codeHash: goneCode.codeHash) == nil)
        #expect(try await store.authorizationCode(codeHash: anonymisedCode.codeHash) == nil)
        #expect(
            try await store.redeemAuthorizationCode(
                codeHash: anonymisedCode.codeHash,
                startingSession: newSession(),
                now: Fixture.time(2)
            ) == .notFound
        )

        let result = try await store.purgeExpired(now: Fixture.time(10 * 86_400_000), retention: 7 * 86_400)
        #expect(result.authorizationCodes == 1, "the code that expired more than the retention ago goes")
        #expect(try await store.authorizationCode(codeHash: oldCode.codeHash) == nil)
        #expect(try await store.authorizationCode(codeHash: liveCode.codeHash) != nil)
    }

    static func clientConsentsArePerUserAndClient(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let other = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let anonymised = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let app = "com.example.one:/callback"
        func consent(
            _ owner: UserID,
            _ client: String = "app.one",
            at redirect: String? = nil
        ) async throws
            -> ClientConsentRecord?
        {
            try await store.clientConsent(userID: owner, clientID: client, redirectURI: redirect ?? app)
        }
        func record(_ owner: UserID, _ scope: String, at time: Int64, redirect: String? = nil) -> ClientConsentRecord {
            ClientConsentRecord(
                userID: owner,
                clientID: "app.one",
                redirectURI: redirect ?? app,
                scope: scope,
                grantedAt: Fixture.time(time)
            )
        }
        #expect(try await consent(user.id) == nil)
        await #expect(throws: StoreError.notFound, "a consent needs its user") {
            try await store.saveClientConsent(record(UserID(), "openid", at: 1))
        }

        try await store.saveClientConsent(record(user.id, "openid", at: 1))
        for owner in [other.id, anonymised.id] {
            try await store.saveClientConsent(record(owner, "openid email", at: 2))
        }
        let stored = try #require(try await consent(user.id))
        #expect(stored.userID == user.id && stored.clientID == "app.one" && stored.scope == "openid")
        #expect(stored.redirectURI == app)
        Fixture.expectSameTime(stored.grantedAt, Fixture.time(1))
        #expect(try await consent(user.id, "app.two") == nil, "per client")
        #expect(try await consent(user.id, at: "com.example.one:/other") == nil, "per redirect URI")
        #expect(try await consent(user.id, at: "com.example.one:/Callback") == nil, "the URI exactly")

        try await store.saveClientConsent(record(user.id, "openid email", at: 2, redirect: "com.example.one:/other"))
        #expect(try await consent(user.id)?.scope == "openid", "one redirect URI's consent leaves the other's")
        try await store.saveClientConsent(record(user.id, "openid email profile", at: 3))
        let replaced = try #require(try await consent(user.id))
        #expect(replaced.scope == "openid email profile")
        Fixture.expectSameTime(replaced.grantedAt, Fixture.time(3))
        #expect(try await consent(other.id)?.scope == "openid email")

        _ = try await store.deleteUser(id: user.id, mode: .delete, appleRevocationDueAt: nil, now: Fixture.time(4))
        _ = try await store.deleteUser(
            id: anonymised.id,
            mode: .anonymise,
            appleRevocationDueAt: nil,
            now: Fixture.time(4)
        )
        #expect(try await consent(user.id) == nil)
        #expect(try await consent(user.id, at: "com.example.one:/other") == nil)
        #expect(try await consent(anonymised.id) == nil, "anonymised too")
        #expect(try await consent(other.id) != nil)
    }
}
