import AccountStore
import AppleSignIn
import SQLKit
import SiwaTesting
import Testing

@testable import AccountStoreSQL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A database of schema version 4, with rows as the version-4 code writes them, opened by this version: the
/// migration upgrades it in place, the data survives and the console's calls work on it.
enum UpgradeScenario {
    static let start: Int64 = 1_767_225_600_000
    static let userA = UserID()
    static let userB = UserID()
    static let userC = UserID()
    static let sessionA1 = SessionID()
    static let sessionA2 = SessionID()
    static let sessionB1 = SessionID()
    static let usedTokenA1: [UInt8] = Array(repeating: 0xA1, count: 32)
    static let currentTokenA1: [UInt8] = Array(repeating: 0xA2, count: 32)
    static let tokenA2: [UInt8] = Array(repeating: 0xA3, count: 32)
    static let tokenB1: [UInt8] = Array(repeating: 0xB1, count: 32)

    static func date(_ offset: Int64) -> Date { Date(timeIntervalSince1970: Double(start + offset) / 1_000) }

    /// Runs `body` with stores that migrate to version 4 only (as the siwa before version 5 did).
    static func atVersion4<R>(_ body: () async throws -> R) async throws -> R {
        try await SQLSchema.$migrationTarget.withValue(4) { try await body() }
    }

    /// Writes, with the statements of the version-4 code, three accounts (names and an email that are not ASCII, a
    /// disabled account with no session), sessions with used, current and revoked refresh tokens, an Apple token, a
    /// signing key, a deletion record, a notification and a team transfer.
    static func writeVersion4Data(_ store: SQLAccountStore) async throws {
        #expect(try await store.appliedSchemaVersion() == 4)
        let (a, b, c) = (userA.description, userB.description, userC.description)
        let statements: [SQLQueryString] = [
            """
            INSERT INTO users (
                id, apple_user_id, client_id, email, email_verified, is_private_email, email_forwarding, given_name,
                family_name, created_at, updated_at, apple_consent_revoked_at, disabled_at
            ) VALUES
                (\(bind: a), '001.upgrade.a', 'com.example.app', 'Ærøskøbing.Ann@Example.DK', 1, 0, 1, 'Åse',
                    'Østergård', \(bind: start), \(bind: start), NULL, NULL),
                (\(bind: b), '001.upgrade.b', 'com.example.web', 'bob@privaterelay.appleid.com', 1, 1, 0, NULL, NULL,
                    \(bind: start + 1_000), \(bind: start + 1_000), \(bind: start + 4_000), NULL),
                (\(bind: c), '001.upgrade.c', 'com.example.app', 'CAROL@example.com', 0, 0, 1, 'Carol', 'King',
                    \(bind: start + 2_000), \(bind: start + 6_000), NULL, \(bind: start + 6_000))
            """,
            """
            INSERT INTO sessions (id, user_id, created_at, revoked_at) VALUES
                (\(bind: sessionA1.description), \(bind: a), \(bind: start + 100), NULL),
                (\(bind: sessionA2.description), \(bind: a), \(bind: start + 200), \(bind: start + 300)),
                (\(bind: sessionB1.description), \(bind: b), \(bind: start + 150), NULL)
            """,
            """
            INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at, used_at) VALUES
                (\(bind: SQLValue.hex(usedTokenA1)), \(bind: sessionA1.description), \(bind: a), \(bind: start + 100),
                    \(bind: start + 3_600_000), \(bind: start + 150)),
                (\(bind: SQLValue.hex(currentTokenA1)), \(bind: sessionA1.description), \(bind: a),
                    \(bind: start + 150), \(bind: start + 3_600_000), NULL),
                (\(bind: SQLValue.hex(tokenA2)), \(bind: sessionA2.description), \(bind: a), \(bind: start + 200),
                    \(bind: start + 3_600_000), NULL),
                (\(bind: SQLValue.hex(tokenB1)), \(bind: sessionB1.description), \(bind: b), \(bind: start + 150),
                    \(bind: start + 3_600_000), NULL)
            """,
            """
            INSERT INTO apple_tokens (user_id, client_id, sealed_refresh_token, stored_at, last_validated_at)
            VALUES (\(bind: a), 'com.example.app', 'c2VhbGVk', \(bind: start + 100), NULL)
            """,
            """
            INSERT INTO signing_keys (kid, sealed_private_key, created_at, retired_at)
            VALUES ('kid-4', 'a2V5', \(bind: start), NULL)
            """,
            "INSERT INTO account_deletions (user_id, deleted_at) VALUES ('\(unsafeRaw: UserID().description)', \(bind: start + 500))",
            """
            INSERT INTO apple_notifications (event_key, type, apple_user_id, user_id, event_time, received_at, outcome)
            VALUES ('event-1', 'email-disabled', '001.upgrade.b', \(bind: b), \(bind: start + 900), \(bind: start + 950),
                'applied')
            """,
            """
            INSERT INTO user_transfers (user_id, transfer_sub, target_team, exported_at, transferred_at)
            VALUES (\(bind: c), '001.transfer.c', 'TEAM2', \(bind: start + 700), NULL)
            """,
        ]
        try await store.write("write version-4 rows") { database in
            for statement in statements { try await database.raw(statement).run() }
        }
    }

    /// Checks, on the store that upgraded the database, that the data survived and the new calls work.
    static func checkUpgraded(_ store: SQLAccountStore) async throws {
        #expect(store.openedAtSchemaVersion == 4, "the store found version 4")
        #expect(try await store.appliedSchemaVersion() == SQLAccountStore.schemaVersion)

        // The accounts, as they were, with their last sign-in taken from their newest session.
        let a = try #require(try await store.user(id: userA))
        #expect(a.appleUserID.rawValue == "001.upgrade.a" && a.email == "Ærøskøbing.Ann@Example.DK" && a.emailVerified)
        #expect(a.givenName == "Åse" && a.familyName == "Østergård" && a.status == .active)
        #expect(a.lastSignInAt == date(200))
        let b = try #require(try await store.user(id: userB))
        #expect(b.isPrivateEmail && !b.emailForwarding && b.status == .consentRevoked && b.lastSignInAt == date(150))
        let c = try #require(try await store.user(id: userC))
        #expect(c.status == .disabled && c.lastSignInAt == nil && c.updatedAt == date(6_000))

        // Search keys were filled: ASCII by the statements, the rest in Swift.
        #expect(try await store.users(email: "ærøskøbing.ann@example.dk").map(\.id) == [userA])
        #expect(try await store.users(email: "carol@EXAMPLE.com").map(\.id) == [userC])
        #expect(try await search(store, "ÆRØSK") == [userA])
        #expect(try await search(store, "åse") == [userA])
        #expect(try await search(store, "ØSTERG") == [userA])
        #expect(try await search(store, "carol") == [userC])
        #expect(try await search(store, "king") == [userC])
        #expect(try await search(store, "BOB@") == [userB])
        #expect(try await search(store, "") == [userC, userB, userA], "everyone, newest first")

        // Sessions: their refresh tokens still rotate (and reuse is still caught); they list with no metadata.
        let now = date(600_000)
        let next = RefreshTokenRecord(
            hash: Array(repeating: 0xA4, count: 32),
            sessionID: sessionA1,
            userID: userA,
            issuedAt: now,
            expiresAt: date(7_200_000)
        )
        #expect(
            try await store.rotateRefreshToken(presentedHash: currentTokenA1, next: next, now: now)
                == .rotated(sessionID: sessionA1, userID: userA)
        )
        let sessions = try await store.sessions(userID: userA, now: now, limit: 10)
        #expect(sessions.map(\.id) == [sessionA1, sessionA2])
        #expect(sessions.first?.lastUsedAt == now && sessions.first?.metadata == SessionMetadata())
        #expect(sessions.last?.revokedAt == date(300))
        #expect(
            try await store.checkRefreshToken(presentedHash: tokenB1, now: now)
                == .current(sessionID: sessionB1, userID: userB)
        )
        #expect(
            try await store.rotateRefreshToken(
                presentedHash: usedTokenA1,
                next: RefreshTokenRecord(
                    hash: Array(repeating: 0xA5, count: 32),
                    sessionID: sessionA1,
                    userID: userA,
                    issuedAt: now,
                    expiresAt: date(7_200_000)
                ),
                now: now
            ) == .reused(sessionID: sessionA1, userID: userA)
        )

        // What else version 4 kept.
        #expect(try await store.appleToken(userID: userA)?.encryptedRefreshToken == Array("sealed".utf8))
        #expect(try await store.signingKeys().map(\.kid) == ["kid-4"])
        #expect(try await store.transfer(userID: userC)?.transferSub.rawValue == "001.transfer.c")
        #expect(try await store.deletedAccounts(since: date(0)).count == 1)
        #expect(try await store.appleNotifications(limit: 10).map(\.eventKey) == ["event-1"])

        // The new calls: a returning sign-in (with its audit event and last sign-in), grants, totals.
        let session = NewSession(
            sessionID: SessionID(),
            refreshTokenHash: Array(repeating: 0xA6, count: 32),
            issuedAt: now,
            expiresAt: date(7_200_000),
            metadata: SessionMetadata(channel: .native, userAgent: "App/1", clientAddress: "192.0.2.9")
        )
        let signedIn = try await store.signIn(
            AppleSignInFacts(appleUserID: a.appleUserID, clientID: a.clientID),
            startingSession: session,
            now: now
        )
        #expect(!signedIn.isNewUser && signedIn.user.lastSignInAt == now)
        let events = try await store.auditEvents(AuditEventFilter(userID: userA), limit: 10, after: nil).items
        #expect(events.map(\.type) == [.signIn] && events.first?.sessionID == session.sessionID)
        #expect(try await store.sessions(userID: userA, now: now, limit: 1).first?.metadata == session.metadata)
        #expect(try await store.grantAdmin(AdminSubject(userA), by: .operator, now: now))
        #expect(try await store.isAdmin(AdminSubject(userA)))
        #expect(
            try await store.accountTotals(createdSince: [date(1_000)])
                == AccountTotals(total: 3, createdSince: [date(1_000): 2])
        )

        // Version 6: an OpenID Connect authorization code is kept, redeemed once into a session, and its replay ends
        // that session.
        let code = AuthorizationCodeRecord(
            codeHash: Array(repeating: 0xC0, count: 32),
            clientID: "grafana",
            redirectURI: "https://grafana.example.com/login/generic_oauth",
            scope: "openid email",
            codeChallenge: "challenge",
            nonce: "nonce",
            userID: userA,
            browserSessionID: session.sessionID,
            authTime: now,
            createdAt: now,
            expiresAt: date(660_000)
        )
        try await store.saveAuthorizationCode(code)
        let rpSession = NewSession(
            sessionID: SessionID(),
            refreshTokenHash: Array(repeating: 0xA7, count: 32),
            issuedAt: now,
            expiresAt: date(7_200_000),
            metadata: SessionMetadata(channel: SignInChannel(rawValue: "oidc:grafana"))
        )
        guard
            case .redeemed(let redeemed) = try await store.redeemAuthorizationCode(
                codeHash: code.codeHash,
                startingSession: rpSession,
                now: now
            )
        else {
            Issue.record("the code was not redeemed")
            return
        }
        #expect(redeemed.clientID == "grafana" && redeemed.issuedSessionID == rpSession.sessionID)
        #expect(
            try await store.redeemAuthorizationCode(codeHash: code.codeHash, startingSession: session, now: now)
                == .replayed(
                    try #require(try await store.authorizationCode(codeHash: code.codeHash)),
                    endedSession: rpSession.sessionID
                )
        )

        // Version 7: the refresh tokens' table without its account key (on SQLite its definition edited, its rows kept: above, the
        // version-4 tokens rotated and their reuse was caught).
        try await RefreshTokenKeyScenario.check(store)

        // Version 11: the admin API's service tokens, found by hash, a name unique among those not revoked.
        let serviceToken = AdminToken(
            name: "upgrade-bot",
            scope: .write,
            createdAt: now,
            createdBy: .operator,
            expiresAt: date(7_200_000)
        )
        try await store.createAdminToken(serviceToken, tokenHash: Array(repeating: 0xB1, count: 32))
        #expect(try await store.adminToken(tokenHash: Array(repeating: 0xB1, count: 32))?.id == serviceToken.id)
        await #expect(throws: StoreError.duplicate) {
            try await store.createAdminToken(
                AdminToken(
                    name: "upgrade-bot",
                    scope: .read,
                    createdAt: now,
                    createdBy: .operator,
                    expiresAt: date(7_200_000)
                ),
                tokenHash: Array(repeating: 0xB2, count: 32)
            )
        }
    }

    private static func search(_ store: SQLAccountStore, _ query: String) async throws -> [UserID] {
        try await store.searchUsers(query, limit: 50, after: nil).items.map(\.id)
    }
}
