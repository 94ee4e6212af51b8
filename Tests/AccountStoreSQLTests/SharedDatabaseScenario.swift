import AccountStore
import AccountStoreSQL
import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Two store instances on one database: what one writes, the other reads and changes.
enum SharedDatabaseScenario {
    static func run(writer: SQLAccountStore, reader: SQLAccountStore) async throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600.250)
        let user = try await writer.signIn(
            AppleSignInFacts(
                appleUserID: AppleUserID("001.shared.\(UUID().uuidString)"),
                clientID: "com.example.app",
                email: "shared@example.com",
                givenName: "Ann"
            ),
            now: now
        ).user
        let session = SessionID()
        let first = RefreshTokenRecord(
            hash: Array(repeating: 1, count: 32),
            sessionID: session,
            userID: user.id,
            issuedAt: now,
            expiresAt: now.addingTimeInterval(3_600)
        )
        try await writer.createSession(firstToken: first, now: now)
        try await writer.addSigningKey(
            SigningKeyRecord(kid: "shared-key", sealedPrivateKey: [1, 2, 3], createdAt: now)
        )
        try await writer.saveServerNonce(hash: Array(repeating: 2, count: 32), expiresAt: now.addingTimeInterval(60))

        let read = try #require(try await reader.user(id: user.id))
        #expect(read == user, "the other instance reads the account as written")
        #expect(try await reader.signingKeys().map(\.kid) == ["shared-key"])
        let again = try await reader.signIn(
            AppleSignInFacts(appleUserID: user.appleUserID, clientID: "com.example.app"),
            now: now.addingTimeInterval(1)
        )
        #expect(!again.isNewUser, "the other instance finds the account")
        #expect(again.user.id == user.id)

        var second = first
        second.hash = Array(repeating: 3, count: 32)
        let rotated = try await reader.rotateRefreshToken(presentedHash: first.hash, next: second, now: now)
        #expect(rotated == .rotated(sessionID: session, userID: user.id))
        let reused = try await writer.rotateRefreshToken(presentedHash: first.hash, next: first, now: now)
        #expect(reused == .reused(sessionID: session, userID: user.id), "the writer sees the reader's rotation")
        #expect(try await reader.revokedSessions(since: now).map(\.sessionID) == [session])
        #expect(try await reader.consumeServerNonce(hash: Array(repeating: 2, count: 32), now: now))
        #expect(!(try await writer.consumeServerNonce(hash: Array(repeating: 2, count: 32), now: now)))
    }
}
