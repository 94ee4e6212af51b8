public import AccountStore
import AppleSignIn
public import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs every check of ``AccountStoreConformance`` against stores made by `makeStore`, one fresh store per check.
///
/// Failed expectations are recorded as Swift Testing issues of the calling test; a failed `#require` or a store error
/// ends the check and is rethrown.
///
/// - Parameters:
///   - makeStore: Makes a new, empty store.
///   - tearDown: Called with each store after its check, also when the check failed (close pools here).
/// - Throws: The first error a check throws.
public func checkAccountStoreConformance(
    _ makeStore: @Sendable () async throws -> any AccountStore,
    tearDown: @Sendable (any AccountStore) async throws -> Void = { _ in }
) async throws {
    for check in AccountStoreConformance.checks {
        let store = try await makeStore()
        do {
            try await check.run(store)
        } catch {
            try await tearDown(store)
            throw error
        }
        try await tearDown(store)
    }
}

/// The conformance suite every ``AccountStore`` implementation passes: one check per rule of the protocol.
///
/// Each check expects a new, empty store. Dates are built from whole milliseconds, since stores keep times to the
/// millisecond. Run them one by one as arguments of a parameterized test (`@Test(arguments:
/// AccountStoreConformance.checks)`) or all at once with ``checkAccountStoreConformance(_:tearDown:)``.
public enum AccountStoreConformance {
    /// One rule of the protocol and the scenario that exercises it.
    public struct Check: Sendable, CustomStringConvertible, CustomTestStringConvertible {
        /// A short name, used as the test's argument description.
        public let name: String
        /// Runs the scenario against a new, empty store.
        public let run: @Sendable (any AccountStore) async throws -> Void

        public init(_ name: String, _ run: @escaping @Sendable (any AccountStore) async throws -> Void) {
            self.name = name
            self.run = run
        }

        public var description: String { name }
        public var testDescription: String { name }
    }

    /// Every check, in the order of the protocol's declarations.
    public static let checks: [Check] =
        [
            Check("signIn creates the account, then finds it", signInCreatesThenFinds),
            Check("signIn takes a later email and keeps it when none is sent", signInUpdatesEmail),
            Check("signIn fills a missing name once and never replaces or blanks it", signInKeepsTheFirstName),
            Check("20 concurrent first sign-ins create one account", concurrentFirstSignInsCreateOneAccount),
            Check("user(id:) and user(appleUserID:) find only existing accounts", usersAreFoundByEitherID),
            Check("users(limit:after:) pages in creation order", usersArePagedInCreationOrder),
            Check("deleteUser removes the account, its Apple token, sessions and tokens", deleteUserRemovesEverything),
            Check("saveAppleToken replaces the token and needs an existing user", appleTokenIsReplaced),
            Check("createSession needs a user and a new token hash", createSessionNeedsUserAndNewHash),
            Check("a rotated token presented again is reuse and revokes the session", rotationDetectsReuse),
            Check(
                "a used token presented again within the grace window rotates again, after it is reuse",
                reuseWithinGraceRotatesAgain
            ),
            Check(
                "a rotated token presented after the grace window naming its stored successor is reuse",
                reuseNamingTheStoredSuccessorIsReuse
            ),
            Check(
                "10 presentations of a used token within the grace window leave one current token",
                concurrentPresentationsWithinGraceLeaveOneChain
            ),
            Check("rotation answers expired and notFound", rotationAnswersExpiredAndNotFound),
            Check("10 concurrent rotations of one token rotate it once", concurrentRotationsRotateOnce),
            Check("the next token takes session and user from the presented one", nextTokenTakesPresentedIDs),
            Check("a failed rotation leaves the token current", failedRotationChangesNothing),
            Check("session(refreshTokenHash:) finds the token's session", sessionIsFoundByTokenHash),
            Check("revokeSession revokes once", revokeSessionRevokesOnce),
            Check("revokeSessions(userID:) revokes and returns the user's active sessions", revokeSessionsOfUser),
            Check("revokedSessions(since:) lists revocations at or after since", revokedSessionsSince),
            Check("a server nonce is consumed once while unexpired", serverNonceIsConsumedOnce),
            Check("10 concurrent consumptions of one nonce succeed once", concurrentNonceConsumptionsSucceedOnce),
            Check("a signing key retires the current one; kids are unique", signingKeysRotate),
            Check("ping succeeds", pingSucceeds),
        ] + lifecycleChecks + transferChecks + operatorChecks + sealedDataChecks + consoleChecks + adminTokenChecks
        + authorizationCodeChecks + lifecycleEventChecks + webhookChecks

    // MARK: Accounts

    static func signInCreatesThenFinds(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(
            email: "ann@example.com",
            verified: true,
            isPrivate: false,
            given: "Ann",
            family: "Lee"
        )
        let first = try await store.signIn(facts, now: Fixture.time(0))
        #expect(first.isNewUser, "the first sign-in creates the account")
        #expect(first.user.appleUserID == facts.appleUserID)
        #expect(first.user.clientID == facts.clientID)
        #expect(first.user.email == "ann@example.com")
        #expect(first.user.emailVerified)
        #expect(!first.user.isPrivateEmail)
        #expect(first.user.emailForwarding, "a new account forwards email")
        #expect(first.user.givenName == "Ann")
        #expect(first.user.familyName == "Lee")
        Fixture.expectSameTime(first.user.createdAt, Fixture.time(0))
        Fixture.expectSameTime(first.user.updatedAt, Fixture.time(0))

        var later = facts
        later.clientID = "com.example.web"
        let second = try await store.signIn(later, now: Fixture.time(5_000))
        #expect(!second.isNewUser, "a later sign-in finds the account")
        #expect(second.user.id == first.user.id)
        #expect(second.user.clientID == "com.example.web", "the client id is the one last signed in through")
        Fixture.expectSameTime(second.user.createdAt, Fixture.time(0))
        Fixture.expectSameTime(second.user.updatedAt, Fixture.time(5_000))

        let stored = try #require(try await store.user(id: first.user.id))
        Fixture.expectSameUser(stored, second.user)
    }

    static func signInUpdatesEmail(_ store: any AccountStore) async throws {
        let apple = Fixture.appleUserID()
        let created = try await store.signIn(
            Fixture.facts(apple, email: "old@example.com", verified: false, isPrivate: false),
            now: Fixture.time(0)
        )
        let changed = try await store.signIn(
            Fixture.facts(apple, email: "new@privaterelay.appleid.com", verified: true, isPrivate: true),
            now: Fixture.time(1_000)
        )
        #expect(changed.user.id == created.user.id)
        #expect(changed.user.email == "new@privaterelay.appleid.com", "a sign-in carrying an email updates it")
        #expect(changed.user.emailVerified)
        #expect(changed.user.isPrivateEmail)

        let silent = try await store.signIn(Fixture.facts(apple), now: Fixture.time(2_000))
        #expect(silent.user.email == "new@privaterelay.appleid.com", "a sign-in without an email keeps the stored one")
        #expect(silent.user.emailVerified)
        #expect(silent.user.isPrivateEmail)

        let stored = try #require(try await store.user(id: created.user.id))
        #expect(stored.email == "new@privaterelay.appleid.com")
        #expect(stored.emailVerified)
        #expect(stored.isPrivateEmail)
    }

    static func signInKeepsTheFirstName(_ store: any AccountStore) async throws {
        let apple = Fixture.appleUserID()
        let nameless = try await store.signIn(Fixture.facts(apple), now: Fixture.time(0))
        #expect(nameless.user.givenName == nil)
        #expect(nameless.user.familyName == nil)

        let blank = try await store.signIn(Fixture.facts(apple, given: "", family: ""), now: Fixture.time(1_000))
        #expect(blank.user.givenName == nil, "an empty name does not fill a missing one")
        #expect(blank.user.familyName == nil)

        let named = try await store.signIn(Fixture.facts(apple, given: "Ann", family: "Lee"), now: Fixture.time(2_000))
        #expect(named.user.givenName == "Ann", "a missing name is filled")
        #expect(named.user.familyName == "Lee")

        let renamed = try await store.signIn(
            Fixture.facts(apple, given: "Bob", family: "Ray"),
            now: Fixture.time(3_000)
        )
        #expect(renamed.user.givenName == "Ann", "a stored name is never replaced")
        #expect(renamed.user.familyName == "Lee")

        let blanked = try await store.signIn(Fixture.facts(apple, given: "", family: ""), now: Fixture.time(4_000))
        #expect(blanked.user.givenName == "Ann", "a stored name is never blanked")
        #expect(blanked.user.familyName == "Lee")
        _ = try await store.signIn(Fixture.facts(apple), now: Fixture.time(5_000))
        let stored = try #require(try await store.user(appleUserID: apple))
        #expect(stored.givenName == "Ann")
        #expect(stored.familyName == "Lee")

        let other = Fixture.appleUserID()
        _ = try await store.signIn(Fixture.facts(other, given: "Zoe"), now: Fixture.time(0))
        let completed = try await store.signIn(
            Fixture.facts(other, given: "Eve", family: "Kim"),
            now: Fixture.time(1_000)
        )
        #expect(completed.user.givenName == "Zoe", "each name part is kept on its own")
        #expect(completed.user.familyName == "Kim", "each missing name part is filled on its own")
    }

    static func concurrentFirstSignInsCreateOneAccount(_ store: any AccountStore) async throws {
        let facts = Fixture.facts(email: "race@example.com", given: "Ann", family: "Lee")
        try await Fixture.warmUp(store)
        let outcomes = try await withThrowingTaskGroup(of: SignInOutcome.self) { group in
            for attempt in 0..<20 {
                group.addTask { try await store.signIn(facts, now: Fixture.time(Int64(attempt))) }
            }
            return try await group.reduce(into: [SignInOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.count == 20)
        #expect(Set(outcomes.map(\.user.id)).count == 1, "every racing sign-in answers with the same account")
        #expect(outcomes.filter(\.isNewUser).count == 1, "exactly one racing sign-in created the account")
        let all = try await store.users(limit: 100, after: nil)
        #expect(all.filter { $0.appleUserID == facts.appleUserID }.count == 1, "one account per Apple user")
        let stored = try #require(try await store.user(appleUserID: facts.appleUserID))
        #expect(stored.id == outcomes.first?.user.id)
    }

    static func usersAreFoundByEitherID(_ store: any AccountStore) async throws {
        let ann = try await store.signIn(Fixture.facts(given: "Ann"), now: Fixture.time(0)).user
        let bob = try await store.signIn(Fixture.facts(given: "Bob"), now: Fixture.time(1)).user
        let byID = try #require(try await store.user(id: ann.id))
        Fixture.expectSameUser(byID, ann)
        let byApple = try #require(try await store.user(appleUserID: bob.appleUserID))
        Fixture.expectSameUser(byApple, bob)
        #expect(try await store.user(id: UserID()) == nil, "an unknown id finds nothing")
        #expect(try await store.user(appleUserID: Fixture.appleUserID()) == nil, "an unknown Apple user finds nothing")
    }

    static func usersArePagedInCreationOrder(_ store: any AccountStore) async throws {
        #expect(try await store.users(limit: 10, after: nil).isEmpty, "a new store has no accounts")
        var created: [UserID] = []
        for index in 0..<5 {
            let outcome = try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index) * 1_000))
            created.append(outcome.user.id)
        }
        let first = try await store.users(limit: 2, after: nil)
        #expect(first.map(\.id) == Array(created[0..<2]))
        let second = try await store.users(limit: 2, after: created[1])
        #expect(second.map(\.id) == Array(created[2..<4]))
        let third = try await store.users(limit: 2, after: created[3])
        #expect(third.map(\.id) == [created[4]])
        #expect(try await store.users(limit: 2, after: created[4]).isEmpty, "nothing after the last account")
        #expect(try await store.users(limit: 0, after: nil).isEmpty, "a zero limit answers nothing")
        #expect(try await store.users(limit: 10, after: nil).map(\.id) == created)
        let page = try await store.users(limit: 1, after: created[2])
        let expected = try #require(try await store.user(id: created[3]))
        #expect(page.count == 1)
        if let user = page.first { Fixture.expectSameUser(user, expected) }
    }

    static func deleteUserRemovesEverything(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let bystander = try await store.signIn(Fixture.facts(), now: Fixture.time(1)).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        try await store.saveAppleToken(Fixture.appleToken(bystander.id))
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(10))
        let second = Fixture.refreshToken(session, user.id)
        #expect(
            try await store.rotateRefreshToken(presentedHash: first.hash, next: second, now: Fixture.time(20))
                == .rotated(sessionID: session, userID: user.id)
        )
        let otherToken = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: otherToken, now: Fixture.time(30))
        let bystanderToken = Fixture.refreshToken(SessionID(), bystander.id)
        try await store.createSession(firstToken: bystanderToken, now: Fixture.time(40))

        let deleted = try await store.deleteUser(
            id: user.id,
            mode: .delete,
            appleRevocationDueAt: nil,
            now: Fixture.time(45)
        )
        #expect(deleted?.user.id == user.id, "deleting an existing account answers it")
        #expect(Set(deleted?.endedSessions ?? []) == [session, otherToken.sessionID], "its active sessions end")
        #expect(deleted?.queuedRevocation == nil, "no revocation is queued unless asked")
        #expect(try await store.dueAppleRevocations(now: Fixture.time(100), limit: 10).isEmpty)
        #expect(try await store.user(id: user.id) == nil)
        #expect(try await store.user(appleUserID: user.appleUserID) == nil)
        #expect(try await store.appleToken(userID: user.id) == nil, "the Apple token goes with the account")
        #expect(try await store.session(refreshTokenHash: second.hash) == nil, "refresh tokens go with the account")
        #expect(try await store.session(refreshTokenHash: otherToken.hash) == nil)
        for hash in [first.hash, second.hash, otherToken.hash] {
            let outcome = try await store.rotateRefreshToken(
                presentedHash: hash,
                next: Fixture.refreshToken(session, user.id),
                now: Fixture.time(50)
            )
            #expect(outcome == .notFound, "a deleted account's refresh tokens are gone")
        }
        #expect(try await store.revokeSessions(userID: user.id, now: Fixture.time(60)).isEmpty, "sessions are gone")
        #expect(!(try await store.users(limit: 10, after: nil).map(\.id).contains(user.id)))
        let deletedAgain = try await store.deleteUser(
            id: user.id,
            mode: .delete,
            appleRevocationDueAt: Fixture.time(61),
            now: Fixture.time(61)
        )
        #expect(deletedAgain == nil, "deleting it again answers nil")
        await #expect(throws: StoreError.notFound, "no Apple token for a deleted account") {
            try await store.saveAppleToken(Fixture.appleToken(user.id))
        }

        #expect(try await store.appleToken(userID: bystander.id) != nil, "other accounts keep their Apple token")
        #expect(
            try await store.rotateRefreshToken(
                presentedHash: bystanderToken.hash,
                next: Fixture.refreshToken(bystanderToken.sessionID, bystander.id),
                now: Fixture.time(70)
            ) == .rotated(sessionID: bystanderToken.sessionID, userID: bystander.id),
            "other accounts keep their sessions"
        )
        let again = try await store.signIn(Fixture.facts(user.appleUserID), now: Fixture.time(80))
        #expect(again.isNewUser, "the Apple user signing in again gets a new account")
        #expect(again.user.id != user.id)
    }

    // MARK: Apple refresh tokens

    static func appleTokenIsReplaced(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        #expect(try await store.appleToken(userID: user.id) == nil, "no Apple token until one is saved")

        let first = AppleTokenRecord(
            userID: user.id,
            clientID: "com.example.app",
            encryptedRefreshToken: Array(0...255),
            storedAt: Fixture.time(1_000)
        )
        try await store.saveAppleToken(first)
        let storedFirst = try #require(try await store.appleToken(userID: user.id))
        Fixture.expectSameAppleToken(storedFirst, first)

        let second = AppleTokenRecord(
            userID: user.id,
            clientID: "com.example.web",
            encryptedRefreshToken: Fixture.randomBytes(60),
            storedAt: Fixture.time(2_000),
            lastValidatedAt: Fixture.time(3_000)
        )
        try await store.saveAppleToken(second)
        let storedSecond = try #require(try await store.appleToken(userID: user.id))
        Fixture.expectSameAppleToken(storedSecond, second)

        await #expect(throws: StoreError.notFound, "an Apple token needs an existing user") {
            try await store.saveAppleToken(Fixture.appleToken(UserID()))
        }
        #expect(try await store.appleToken(userID: UserID()) == nil)
    }

    // MARK: Sessions

    static func createSessionNeedsUserAndNewHash(_ store: any AccountStore) async throws {
        await #expect(throws: StoreError.notFound, "a session needs an existing user") {
            try await store.createSession(firstToken: Fixture.refreshToken(SessionID(), UserID()), now: Fixture.time(0))
        }
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let token = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: token, now: Fixture.time(1))
        await #expect(throws: StoreError.duplicate, "a refresh token hash is unique") {
            try await store.createSession(
                firstToken: Fixture.refreshToken(SessionID(), user.id, hash: token.hash),
                now: Fixture.time(2)
            )
        }
        let found = try #require(try await store.session(refreshTokenHash: token.hash))
        #expect(found.sessionID == token.sessionID, "the failed session left the first token alone")
    }

    static func rotationDetectsReuse(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))

        let second = Fixture.refreshToken(session, user.id)
        let rotated = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: second,
            now: Fixture.time(1_000)
        )
        #expect(rotated == .rotated(sessionID: session, userID: user.id), "a current token rotates")

        let reused = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(2_000)
        )
        #expect(reused == .reused(sessionID: session, userID: user.id), "a rotated token presented again is reuse")

        let afterTheft = try await store.rotateRefreshToken(
            presentedHash: second.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(3_000)
        )
        #expect(afterTheft == .revoked(sessionID: session, userID: user.id), "reuse revoked the whole session")
        let revocations = try await store.revokedSessions(since: Fixture.time(0))
        #expect(revocations.map(\.sessionID) == [session])
        if let revocation = revocations.first {
            #expect(revocation.userID == user.id)
            Fixture.expectSameTime(revocation.revokedAt, Fixture.time(2_000))
        }
        #expect(!(try await store.revokeSession(session, now: Fixture.time(4_000))), "the session is already revoked")
    }

    static func reuseWithinGraceRotatesAgain(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        let second = Fixture.refreshToken(session, user.id)
        let rotated = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: second,
            now: Fixture.time(1_000),
            reuseGrace: 5
        )
        #expect(rotated == .rotated(sessionID: session, userID: user.id))

        // A client retrying 2 s later names the same successor (siwa derives it from the presented token): answered
        // as it stands, still the one current token.
        let retry = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: second,
            now: Fixture.time(3_000),
            reuseGrace: 5
        )
        #expect(retry == .rotated(sessionID: session, userID: user.id), "within the grace window: no revocation")
        #expect(
            try await store.checkRefreshToken(presentedHash: second.hash, now: Fixture.time(3_000))
                == .current(sessionID: session, userID: user.id)
        )

        // Another successor within the window replaces the current one: the family stays one chain.
        let replacement = Fixture.refreshToken(session, user.id)
        let again = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: replacement,
            now: Fixture.time(3_500),
            reuseGrace: 5
        )
        #expect(again == .rotated(sessionID: session, userID: user.id))
        #expect(
            try await store.checkRefreshToken(presentedHash: replacement.hash, now: Fixture.time(3_500))
                == .current(sessionID: session, userID: user.id)
        )
        #expect(
            try await store.checkRefreshToken(presentedHash: second.hash, now: Fixture.time(3_500))
                == .used(sessionID: session, userID: user.id),
            "the successor it replaced is no longer current"
        )
        #expect(try await store.revokedSessions(since: Fixture.time(0)).isEmpty)

        // The grace window counts from the first use: 6 s after it, the same token is theft.
        let late = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(7_000),
            reuseGrace: 5
        )
        #expect(late == .reused(sessionID: session, userID: user.id), "after the grace window: reuse")
        #expect(
            try await store.rotateRefreshToken(
                presentedHash: replacement.hash,
                next: Fixture.refreshToken(session, user.id),
                now: Fixture.time(8_000),
                reuseGrace: 5
            ) == .revoked(sessionID: session, userID: user.id),
            "reuse revoked the whole session, the replacement included"
        )
    }

    /// siwa derives a token's successor from it, so a rotated token presented again after the grace window names
    /// the successor its first rotation stored, still current: that is reuse all the same, not a rotation.
    static func reuseNamingTheStoredSuccessorIsReuse(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        let second = Fixture.refreshToken(session, user.id, issuedAt: Fixture.time(1_000))
        #expect(
            try await store.rotateRefreshToken(
                presentedHash: first.hash,
                next: second,
                now: Fixture.time(1_000),
                reuseGrace: 5
            ) == .rotated(sessionID: session, userID: user.id)
        )
        var again = second
        again.issuedAt = Fixture.time(9_000)
        let late = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: again,
            now: Fixture.time(9_000),
            reuseGrace: 5
        )
        #expect(late == .reused(sessionID: session, userID: user.id), "\(late)")
        #expect(
            try await store.checkRefreshToken(presentedHash: second.hash, now: Fixture.time(9_000))
                == .revoked(sessionID: session, userID: user.id),
            "reuse revoked the session, the successor included"
        )
    }

    /// Ten presentations of one token at once within the grace window, each naming a successor of its own (a thief
    /// racing the client, or instances whose data keys differ): every one is answered, and one token of the session
    /// is current afterwards, so at most one chain survives (RFC 9700 §4.14.2).
    static func concurrentPresentationsWithinGraceLeaveOneChain(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        let successors = (0..<10).map { _ in Fixture.refreshToken(session, user.id) }
        let outcomes = try await withThrowingTaskGroup(of: RotationOutcome.self) { group in
            for successor in successors {
                group.addTask {
                    try await store.rotateRefreshToken(
                        presentedHash: first.hash,
                        next: successor,
                        now: Fixture.time(1_000),
                        reuseGrace: 5
                    )
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0 == .rotated(sessionID: session, userID: user.id) }, "\(outcomes)")
        var current = 0
        for successor in successors {
            if case .current = try await store.checkRefreshToken(
                presentedHash: successor.hash,
                now: Fixture.time(1_000)
            ) {
                current += 1
            }
        }
        #expect(current == 1, "\(current) tokens of one session are current: the family branched")
    }

    static func rotationAnswersExpiredAndNotFound(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let token = Fixture.refreshToken(session, user.id, issuedAt: Fixture.time(0), expiresAt: Fixture.time(60_000))
        try await store.createSession(firstToken: token, now: Fixture.time(0))

        for now in [Fixture.time(60_000), Fixture.time(90_000)] {
            let outcome = try await store.rotateRefreshToken(
                presentedHash: token.hash,
                next: Fixture.refreshToken(session, user.id),
                now: now
            )
            #expect(outcome == .expired, "a token at or past its expiry does not rotate")
        }
        #expect(try await store.revokedSessions(since: Fixture.time(0)).isEmpty, "expiry revokes nothing")

        let unknown = try await store.rotateRefreshToken(
            presentedHash: Fixture.randomBytes(32),
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(1_000)
        )
        #expect(unknown == .notFound, "an unknown token is not found")

        let fresh = try await store.rotateRefreshToken(
            presentedHash: token.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(59_999)
        )
        #expect(fresh == .rotated(sessionID: session, userID: user.id), "a token just before its expiry rotates")
    }

    static func concurrentRotationsRotateOnce(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let token = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: token, now: Fixture.time(0))
        try await Fixture.warmUp(store)

        let outcomes = try await withThrowingTaskGroup(of: RotationOutcome.self) { group in
            for attempt in 0..<10 {
                group.addTask {
                    try await store.rotateRefreshToken(
                        presentedHash: token.hash,
                        next: Fixture.refreshToken(session, user.id),
                        now: Fixture.time(1_000 + Int64(attempt))
                    )
                }
            }
            return try await group.reduce(into: [RotationOutcome]()) { $0.append($1) }
        }
        let rotated = outcomes.filter { $0 == .rotated(sessionID: session, userID: user.id) }
        let reused = outcomes.filter { $0 == .reused(sessionID: session, userID: user.id) }
        let revoked = outcomes.filter { $0 == .revoked(sessionID: session, userID: user.id) }
        #expect(rotated.count == 1, "exactly one concurrent presentation rotates the token")
        #expect(reused.count >= 1, "the others see a used token")
        #expect(rotated.count + reused.count + revoked.count == 10, "the others answer reused or revoked")
        #expect(try await store.revokedSessions(since: Fixture.time(0)).map(\.sessionID) == [session])
    }

    static func nextTokenTakesPresentedIDs(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))

        let misaddressed = Fixture.refreshToken(SessionID(), UserID())
        let rotated = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: misaddressed,
            now: Fixture.time(1_000)
        )
        #expect(rotated == .rotated(sessionID: session, userID: user.id))
        let found = try #require(try await store.session(refreshTokenHash: misaddressed.hash))
        #expect(found.sessionID == session, "the next token belongs to the presented token's session")
        #expect(found.userID == user.id, "the next token belongs to the presented token's user")

        let again = try await store.rotateRefreshToken(
            presentedHash: misaddressed.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(2_000)
        )
        #expect(again == .rotated(sessionID: session, userID: user.id), "the next token is the session's current one")
        #expect(try await store.revokeSessions(userID: user.id, now: Fixture.time(3_000)) == [session])
    }

    static func failedRotationChangesNothing(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let session = SessionID()
        let first = Fixture.refreshToken(session, user.id)
        try await store.createSession(firstToken: first, now: Fixture.time(0))
        let other = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: other, now: Fixture.time(0))

        await #expect(throws: StoreError.duplicate, "a next token whose hash exists is refused") {
            try await store.rotateRefreshToken(
                presentedHash: first.hash,
                next: Fixture.refreshToken(session, user.id, hash: other.hash),
                now: Fixture.time(1_000)
            )
        }
        let retried = try await store.rotateRefreshToken(
            presentedHash: first.hash,
            next: Fixture.refreshToken(session, user.id),
            now: Fixture.time(2_000)
        )
        #expect(retried == .rotated(sessionID: session, userID: user.id), "the failed rotation left the token current")
        #expect(try await store.revokedSessions(since: Fixture.time(0)).isEmpty)
    }

    static func sessionIsFoundByTokenHash(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let token = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: token, now: Fixture.time(0))
        let found = try #require(try await store.session(refreshTokenHash: token.hash))
        #expect(found.sessionID == token.sessionID)
        #expect(found.userID == user.id)
        #expect(try await store.session(refreshTokenHash: Fixture.randomBytes(32)) == nil)

        try await store.revokeSession(token.sessionID, now: Fixture.time(1_000))
        let revoked = try #require(
            try await store.session(refreshTokenHash: token.hash),
            "a revoked session's token still names its session (logout twice)"
        )
        #expect(revoked.sessionID == token.sessionID)
    }

    static func revokeSessionRevokesOnce(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let token = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: token, now: Fixture.time(0))

        #expect(try await store.revokeSession(token.sessionID, now: Fixture.time(1_000)), "an active session revokes")
        #expect(!(try await store.revokeSession(token.sessionID, now: Fixture.time(2_000))), "only once")
        #expect(!(try await store.revokeSession(SessionID(), now: Fixture.time(2_000))), "an unknown session is not")
        let outcome = try await store.rotateRefreshToken(
            presentedHash: token.hash,
            next: Fixture.refreshToken(token.sessionID, user.id),
            now: Fixture.time(3_000)
        )
        #expect(outcome == .revoked(sessionID: token.sessionID, userID: user.id), "its tokens stop working at once")
        let revocations = try await store.revokedSessions(since: Fixture.time(0))
        #expect(revocations.count == 1)
        if let revocation = revocations.first {
            #expect(revocation.sessionID == token.sessionID)
            #expect(revocation.userID == user.id)
            Fixture.expectSameTime(revocation.revokedAt, Fixture.time(1_000))
        }
    }

    static func revokeSessionsOfUser(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let other = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let tokens = (0..<3).map { _ in Fixture.refreshToken(SessionID(), user.id) }
        for token in tokens { try await store.createSession(firstToken: token, now: Fixture.time(0)) }
        let otherToken = Fixture.refreshToken(SessionID(), other.id)
        try await store.createSession(firstToken: otherToken, now: Fixture.time(0))
        try await store.revokeSession(tokens[0].sessionID, now: Fixture.time(1_000))

        let revoked = try await store.revokeSessions(userID: user.id, now: Fixture.time(2_000))
        #expect(Set(revoked) == [tokens[1].sessionID, tokens[2].sessionID], "the user's active sessions")
        #expect(revoked.count == 2)
        #expect(try await store.revokeSessions(userID: user.id, now: Fixture.time(3_000)).isEmpty, "none left")
        for token in tokens {
            let outcome = try await store.rotateRefreshToken(
                presentedHash: token.hash,
                next: Fixture.refreshToken(token.sessionID, user.id),
                now: Fixture.time(4_000)
            )
            #expect(outcome == .revoked(sessionID: token.sessionID, userID: user.id))
        }
        let revocations = try await store.revokedSessions(since: Fixture.time(2_000))
        #expect(Set(revocations.map(\.sessionID)) == [tokens[1].sessionID, tokens[2].sessionID])
        for revocation in revocations { Fixture.expectSameTime(revocation.revokedAt, Fixture.time(2_000)) }
        let untouched = try await store.rotateRefreshToken(
            presentedHash: otherToken.hash,
            next: Fixture.refreshToken(otherToken.sessionID, other.id),
            now: Fixture.time(5_000)
        )
        #expect(untouched == .rotated(sessionID: otherToken.sessionID, userID: other.id), "other users keep theirs")
    }

    static func revokedSessionsSince(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        var sessions: [SessionID] = []
        for index in 0..<3 {
            let token = Fixture.refreshToken(SessionID(), user.id)
            try await store.createSession(firstToken: token, now: Fixture.time(0))
            try await store.revokeSession(token.sessionID, now: Fixture.time(1_000 * Int64(index + 1)))
            sessions.append(token.sessionID)
        }
        let active = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: active, now: Fixture.time(0))

        let all = try await store.revokedSessions(since: Fixture.time(0))
        #expect(Set(all.map(\.sessionID)) == Set(sessions), "every revocation and no active session")
        let fromSecond = try await store.revokedSessions(since: Fixture.time(2_000))
        #expect(Set(fromSecond.map(\.sessionID)) == [sessions[1], sessions[2]], "revocations at or after since")
        for revocation in fromSecond {
            let index = try #require(sessions.firstIndex(of: revocation.sessionID))
            #expect(revocation.userID == user.id)
            Fixture.expectSameTime(revocation.revokedAt, Fixture.time(1_000 * Int64(index + 1)))
        }
        let afterLast = try await store.revokedSessions(since: Fixture.time(3_001))
        #expect(afterLast.isEmpty, "nothing revoked after since")
    }

    // MARK: Server nonces

    static func serverNonceIsConsumedOnce(_ store: any AccountStore) async throws {
        let nonce = Fixture.randomBytes(32)
        try await store.saveServerNonce(hash: nonce, expiresAt: Fixture.time(60_000))
        #expect(try await store.consumeServerNonce(hash: nonce, now: Fixture.time(1_000)), "an unexpired nonce")
        #expect(!(try await store.consumeServerNonce(hash: nonce, now: Fixture.time(1_000))), "only once")
        #expect(!(try await store.consumeServerNonce(hash: Fixture.randomBytes(32), now: Fixture.time(0))), "unknown")

        let expiring = Fixture.randomBytes(32)
        try await store.saveServerNonce(hash: expiring, expiresAt: Fixture.time(60_000))
        #expect(!(try await store.consumeServerNonce(hash: expiring, now: Fixture.time(60_000))), "expired")

        let duplicate = Fixture.randomBytes(32)
        try await store.saveServerNonce(hash: duplicate, expiresAt: Fixture.time(60_000))
        await #expect(throws: StoreError.duplicate, "a nonce is saved once") {
            try await store.saveServerNonce(hash: duplicate, expiresAt: Fixture.time(90_000))
        }
        #expect(try await store.consumeServerNonce(hash: duplicate, now: Fixture.time(59_999)), "the first one stays")
    }

    static func concurrentNonceConsumptionsSucceedOnce(_ store: any AccountStore) async throws {
        let nonce = Fixture.randomBytes(32)
        try await store.saveServerNonce(hash: nonce, expiresAt: Fixture.time(60_000))
        try await Fixture.warmUp(store)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 {
                group.addTask { try await store.consumeServerNonce(hash: nonce, now: Fixture.time(1_000)) }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.filter { $0 }.count == 1, "exactly one concurrent consumption succeeds")
    }

    // MARK: Signing keys

    static func signingKeysRotate(_ store: any AccountStore) async throws {
        #expect(try await store.signingKeys().isEmpty, "a new store has no signing keys")
        let first = SigningKeyRecord(kid: "key-1", sealedPrivateKey: Array(0...255), createdAt: Fixture.time(0))
        try await store.addSigningKey(first)
        var keys = try await store.signingKeys()
        #expect(keys.map(\.kid) == ["key-1"])
        #expect(keys.first?.sealedPrivateKey == Array(0...255))
        #expect(keys.first?.retiredAt == nil, "the only key is current")

        let second = SigningKeyRecord(
            kid: "key-2",
            sealedPrivateKey: Fixture.randomBytes(48),
            createdAt: Fixture.time(1_000)
        )
        try await store.addSigningKey(second)
        let third = SigningKeyRecord(
            kid: "key-3",
            sealedPrivateKey: Fixture.randomBytes(48),
            createdAt: Fixture.time(2_000)
        )
        try await store.addSigningKey(third)
        keys = try await store.signingKeys()
        #expect(keys.map(\.kid) == ["key-1", "key-2", "key-3"], "oldest first")
        guard keys.count == 3 else { return }
        Fixture.expectSameTime(keys[0].retiredAt, Fixture.time(1_000), "retired when the next key was added")
        Fixture.expectSameTime(keys[1].retiredAt, Fixture.time(2_000), "retired at the new key's createdAt")
        #expect(keys[2].retiredAt == nil, "the newest key is current")
        #expect(keys[1].sealedPrivateKey == second.sealedPrivateKey)
        Fixture.expectSameTime(keys[2].createdAt, Fixture.time(2_000))

        let clash = SigningKeyRecord(
            kid: "key-2",
            sealedPrivateKey: Fixture.randomBytes(48),
            createdAt: Fixture.time(3_000)
        )
        await #expect(throws: StoreError.duplicate, "a kid is stored once") {
            try await store.addSigningKey(clash)
        }
        let after = try await store.signingKeys()
        #expect(after.map(\.kid) == ["key-1", "key-2", "key-3"])
        #expect(after.last?.retiredAt == nil, "a refused key retires nothing")
        #expect(after.count == 3 && after[1].sealedPrivateKey == second.sealedPrivateKey, "nor replaces the stored key")
    }

    // MARK: Health

    static func pingSucceeds(_ store: any AccountStore) async throws {
        try await store.ping()
    }
}

/// Test data for the conformance checks.
enum Fixture {
    /// A fixed base time with a millisecond part, so that stores that drop milliseconds fail.
    static let baseMilliseconds: Int64 = 1_767_225_600_123

    /// The base time plus `milliseconds`.
    static func time(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(baseMilliseconds + milliseconds) / 1_000)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000).rounded())
    }

    static func expectSameTime(
        _ actual: Date?,
        _ expected: Date?,
        _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.map(milliseconds) == expected.map(milliseconds), comment, sourceLocation: sourceLocation)
    }

    static func expectSameUser(
        _ actual: UserRecord,
        _ expected: UserRecord,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var normalizedActual = actual
        var normalizedExpected = expected
        for record in [\UserRecord.createdAt, \UserRecord.updatedAt] {
            normalizedActual[keyPath: record] = Date(timeIntervalSince1970: 0)
            normalizedExpected[keyPath: record] = Date(timeIntervalSince1970: 0)
        }
        #expect(normalizedActual == normalizedExpected, sourceLocation: sourceLocation)
        expectSameTime(actual.createdAt, expected.createdAt, sourceLocation: sourceLocation)
        expectSameTime(actual.updatedAt, expected.updatedAt, sourceLocation: sourceLocation)
    }

    static func expectSameAppleToken(
        _ actual: AppleTokenRecord,
        _ expected: AppleTokenRecord,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.userID == expected.userID, sourceLocation: sourceLocation)
        #expect(actual.clientID == expected.clientID, sourceLocation: sourceLocation)
        #expect(actual.encryptedRefreshToken == expected.encryptedRefreshToken, sourceLocation: sourceLocation)
        expectSameTime(actual.storedAt, expected.storedAt, sourceLocation: sourceLocation)
        expectSameTime(actual.lastValidatedAt, expected.lastValidatedAt, sourceLocation: sourceLocation)
    }

    /// A new Apple user id in Apple's format.
    static func appleUserID() -> AppleUserID {
        let hex = randomBytes(16).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return AppleUserID("001234.\(hex.joined()).1234")
    }

    static func facts(
        _ appleUserID: AppleUserID = Fixture.appleUserID(),
        email: String? = nil,
        verified: Bool? = nil,
        isPrivate: Bool? = nil,
        given: String? = nil,
        family: String? = nil
    ) -> AppleSignInFacts {
        AppleSignInFacts(
            appleUserID: appleUserID,
            clientID: "com.example.app",
            email: email,
            emailVerified: verified,
            isPrivateEmail: isPrivate,
            givenName: given,
            familyName: family
        )
    }

    static func appleToken(_ userID: UserID) -> AppleTokenRecord {
        AppleTokenRecord(
            userID: userID,
            clientID: "com.example.app",
            encryptedRefreshToken: randomBytes(60),
            storedAt: time(0)
        )
    }

    /// A refresh token record with a new random hash (or `hash`), valid for an hour from the base time.
    static func refreshToken(
        _ sessionID: SessionID,
        _ userID: UserID,
        hash: [UInt8]? = nil,
        issuedAt: Date = Fixture.time(0),
        expiresAt: Date = Fixture.time(3_600_000)
    ) -> RefreshTokenRecord {
        RefreshTokenRecord(
            hash: hash ?? randomBytes(32),
            sessionID: sessionID,
            userID: userID,
            issuedAt: issuedAt,
            expiresAt: expiresAt
        )
    }

    /// Pings the store from 20 tasks at once, so that a pooled store has its connections open before a race and
    /// the racing calls really overlap.
    static func warmUp(_ store: any AccountStore) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { try await store.ping() } }
            try await group.waitForAll()
        }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max) }
    }
}
