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

/// What one PostgreSQL store instance announces to another through the schema's triggers: every ending and account
/// change, once committed; nothing for a sign-in or a rotation (the hot path stays silent); `resynchronize` first and
/// again after the listening connection is lost. SQLite announces nothing.
///
/// One test at a time: ending the listening connections ends every one of the database.
@Suite(
    .enabled(
        if: StoreHarness.postgresURL != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    ),
    .serialized
)
struct AnnouncementTests {
    /// Reads announcements in order, each within a deadline that only a lost announcement reaches.
    final class Listener: Sendable {
        private let stream: AsyncStream<StoreAnnouncement>

        init(_ stream: AsyncStream<StoreAnnouncement>) {
            self.stream = stream
        }

        func next(_ what: Comment) async throws -> StoreAnnouncement {
            let stream = self.stream
            return try await withThrowingTaskGroup(of: StoreAnnouncement?.self) { group in
                group.addTask {
                    var iterator = stream.makeAsyncIterator()
                    return await iterator.next()
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    return nil
                }
                defer { group.cancelAll() }
                let first = try await group.next() ?? nil
                return try #require(first, "no announcement: \(what)")
            }
        }
    }

    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    /// A new refresh token of `session`.
    static func token(_ session: SessionID, _ userID: UserID) -> RefreshTokenRecord {
        RefreshTokenRecord(
            hash: (0..<32).map { _ in UInt8.random(in: .min ... .max) },
            sessionID: session,
            userID: userID,
            issuedAt: now,
            expiresAt: now.addingTimeInterval(3_600)
        )
    }

    static func signIn(_ store: SQLAccountStore, _ name: String) async throws -> (UserRecord, SessionID, [UInt8]) {
        let user = try await store.signIn(
            AppleSignInFacts(
                appleUserID: AppleUserID("001.announce.\(name).\(UUID().uuidString)"),
                clientID: "com.example.app",
                email: "\(name)@example.com"
            ),
            now: now
        ).user
        let session = SessionID()
        let first = token(session, user.id)
        try await store.createSession(firstToken: first, now: now)
        return (user, session, first.hash)
    }

    @Test func anotherInstanceHearsEveryEndingAndChangeAndNothingElse() async throws {
        let schema = StoreHarness.freshSchema()
        try await StoreHarness.withPostgresStore(schema: schema) { writer in
            try await StoreHarness.withPostgresStore(schema: schema) { reader in
                let announcements = try #require(reader.announcements())
                let heard = Listener(announcements)
                #expect(try await heard.next("the first") == .resynchronize, "listening: read everything once")

                // A sign-in, a new session and a rotation announce nothing: the next announcement is the logout's.
                let (user, session, hash) = try await Self.signIn(writer, "ann")
                let rotated = try await writer.rotateRefreshToken(
                    presentedHash: hash,
                    next: Self.token(session, user.id),
                    now: Self.now
                )
                #expect(rotated == .rotated(sessionID: session, userID: user.id))
                #expect(try await writer.revokeSession(session, now: Self.now.addingTimeInterval(1)))
                #expect(
                    try await heard.next("the logout") == .sessionEnded(session, at: Self.now.addingTimeInterval(1))
                )

                // Disabling: each session, and the account.
                let (bob, bobSession, _) = try await Self.signIn(writer, "bob")
                _ = try await writer.disableUser(id: bob.id, now: Self.now.addingTimeInterval(2))
                var disabled: Set<StoreAnnouncement> = []
                for _ in 0..<2 { disabled.insert(try await heard.next("the disabling")) }
                #expect(
                    disabled == [
                        .sessionEnded(bobSession, at: Self.now.addingTimeInterval(2)), .accountChanged(bob.id),
                    ]
                )

                // Deleting: the account's sessions and the deletion.
                let (cat, catSession, _) = try await Self.signIn(writer, "cat")
                _ = try await writer.deleteUser(
                    id: cat.id,
                    mode: .delete,
                    appleRevocationDueAt: nil,
                    now: Self.now.addingTimeInterval(3)
                )
                var deleted: Set<StoreAnnouncement> = []
                for _ in 0..<2 { deleted.insert(try await heard.next("the deletion")) }
                #expect(
                    deleted == [
                        .sessionEnded(catSession, at: Self.now.addingTimeInterval(3)),
                        .accountDeleted(cat.id, at: Self.now.addingTimeInterval(3)),
                    ]
                )

                try await writer.addSigningKey(
                    SigningKeyRecord(kid: "announced", sealedPrivateKey: [1, 2, 3], createdAt: Self.now)
                )
                #expect(try await heard.next("the new key") == .signingKeysChanged)

                // Reuse of a rotated token ends its session, announced like a logout.
                let (dan, danSession, danHash) = try await Self.signIn(writer, "dan")
                _ = try await writer.rotateRefreshToken(
                    presentedHash: danHash,
                    next: Self.token(danSession, dan.id),
                    now: Self.now
                )
                let reused = try await writer.rotateRefreshToken(
                    presentedHash: danHash,
                    next: Self.token(danSession, dan.id),
                    now: Self.now.addingTimeInterval(60)
                )
                #expect(reused == .reused(sessionID: danSession, userID: dan.id))
                #expect(
                    try await heard.next("the reuse") == .sessionEnded(danSession, at: Self.now.addingTimeInterval(60))
                )

                // Another deployment's schema in the same database is not heard.
                try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema()) { other in
                    let (_, otherSession, _) = try await Self.signIn(other, "eve")
                    #expect(try await other.revokeSession(otherSession, now: Self.now))
                }
                let (_, lastSession, _) = try await Self.signIn(writer, "fay")
                #expect(try await writer.revokeSession(lastSession, now: Self.now))
                #expect(
                    try await heard.next("after another schema's logout") == .sessionEnded(lastSession, at: Self.now),
                    "the other schema's ending was skipped"
                )
            }
        }
    }

    @Test func aLostListeningConnectionComesBackAndSaysToReadEverything() async throws {
        let schema = StoreHarness.freshSchema()
        try await StoreHarness.withPostgresStore(schema: schema) { writer in
            try await StoreHarness.withPostgresStore(schema: schema) { reader in
                let heard = Listener(try #require(reader.announcements()))
                #expect(try await heard.next("the first") == .resynchronize)
                // The database ends the listening connection (a restart, a failover, an idle-connection reaper).
                let ended = try await writer.terminateListeningConnections()
                #expect(ended >= 1, "the listener's connection was found")
                #expect(try await heard.next("after the loss") == .resynchronize, "missed meanwhile: read everything")
                let (_, session, _) = try await Self.signIn(writer, "gil")
                #expect(try await writer.revokeSession(session, now: Self.now))
                #expect(try await heard.next("after reconnecting") == .sessionEnded(session, at: Self.now))
            }
        }
    }

    @Test func sqliteAnnouncesNothing() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { store in
                #expect(store.announcements() == nil, "one process: its own changes are known, the rest is polled")
            }
        }
    }
}
