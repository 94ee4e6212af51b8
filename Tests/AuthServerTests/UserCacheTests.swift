import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import HummingbirdCore
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

@testable import AuthServer

/// `GET /api/me` answers from the in-memory user cache; these tests pin down how fresh it stays.
@Suite("Server: user cache")
struct UserCacheTests {
    @Test func anAccountChangedByAnotherInstanceShowsWithinTheRefreshInterval() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("before@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let first = try await harness.call(.get, "/api/me", bearer: access)
            #expect(first.json.string("email") == "before@example.com")

            // Another instance writes the account in the shared store.
            let id = try #require(first.json.string("id"))
            let userID = try #require(UserID(id))
            let stored = try #require(try await harness.store.user(id: userID))
            _ = try await harness.store.signIn(
                AppleSignInFacts(
                    appleUserID: stored.appleUserID,
                    clientID: stored.clientID,
                    email: "after@example.com",
                    emailVerified: true,
                    isPrivateEmail: false
                ),
                now: harness.clock.now.addingTimeInterval(1)
            )
            var email = first.json.string("email")
            for _ in 0..<50 where email != "after@example.com" {
                try await Task.sleep(for: .milliseconds(100))
                email = try await harness.call(.get, "/api/me", bearer: access).json.string("email")
            }
            #expect(email == "after@example.com", "the refresh from the store drops the changed account")
        }
    }

    @Test func anAccountDeletedByAnotherInstanceIsRefused() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("gone@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let first = try await harness.call(.get, "/api/me", bearer: access)
            #expect(first.status == .ok)
            let id = try #require(first.json.string("id"))
            let userID = try #require(UserID(id))
            _ = try await harness.store.deleteUser(
                id: userID,
                mode: .delete,
                appleRevocationDueAt: nil,
                now: harness.clock.now
            )
            var status = first.status
            for _ in 0..<50 where status == .ok {
                try await Task.sleep(for: .milliseconds(100))
                status = try await harness.call(.get, "/api/me", bearer: access).status
            }
            #expect(status == .unauthorized, "a cached account of a deleted user is not served")
        }
    }
}

/// `GET /api/me` writes the user object itself; it must be the document `JSONEncoder` would write.
@Suite("Server: user object encoding")
struct UserResponseEncodingTests {
    static let dates: [Date] = [
        Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29
        Date(timeIntervalSince1970: 1_767_225_599.999), Date(timeIntervalSince1970: 4_107_542_400),  // 2100-03-01
        Date(timeIntervalSince1970: 1_800_000_000.5), Date(timeIntervalSince1970: 253_402_300_799),  // 9999-12-31
    ]

    @Test(arguments: dates)
    func sameDocumentAsJSONEncoder(date: Date) throws {
        let user = UserRecord(
            id: UserID(),
            appleUserID: AppleUserID("001.x.1"),
            clientID: ClientID("com.example.app"),
            email: "a\"b\\c\u{1}@example.com",
            emailVerified: true,
            isPrivateEmail: false,
            emailForwarding: false,
            givenName: "Zoë\n",
            familyName: nil,
            createdAt: date,
            updatedAt: date
        )
        let response = UserResponse(user)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let expected = try JSONSerialization.jsonObject(with: encoder.encode(response)) as? NSDictionary
        let written = try JSONSerialization.jsonObject(with: Data(response.jsonBytes)) as? NSDictionary
        #expect(written == expected)
        #expect(written?["familyName"] == nil, "absent values are left out, as JSONEncoder does")
    }
}

@Suite("Server: bearer header parsing")
struct BearerHeaderTests {
    @Test func schemeIsCaseInsensitiveAndBlanksAreIgnored() async throws {
        try await ServerHarness.run { harness in
            let access = try #require(try await harness.signIn("bearer@example.com").json.string("accessToken"))
            for header in ["Bearer \(access)", "bearer \(access)", "BEARER   \(access)\t ", "BeArEr \(access)"] {
                let answer = try await harness.server.execute(
                    uri: "/api/me",
                    method: .get,
                    headers: [.authorization: header],
                    body: nil
                )
                #expect(answer.status == .ok, "\(header.prefix(10))")
            }
            for header in ["Bearer", "Bearer    ", "Basic \(access)", "Bearer\(access)", "Bearerx \(access)"] {
                let answer = try await harness.server.execute(
                    uri: "/api/me",
                    method: .get,
                    headers: [.authorization: header],
                    body: nil
                )
                #expect(answer.status == .unauthorized, "\(header.prefix(10))")
            }
        }
    }
}

@Suite("Server: session answer encoding")
struct SessionResponseEncodingTests {
    @Test(arguments: [true, false])
    func sameDocumentAsJSONEncoder(withUser: Bool) throws {
        let user = UserRecord(
            id: UserID(),
            appleUserID: AppleUserID("001.y.1"),
            clientID: ClientID("com.example.app"),
            email: nil,
            emailVerified: false,
            isPrivateEmail: false,
            givenName: "Ann",
            familyName: "O\"Neil",
            createdAt: Date(timeIntervalSince1970: 1_800_000_000),
            updatedAt: Date(timeIntervalSince1970: 1_800_000_000)
        )
        // A sign-in answers the user object the cache encoded (`UserCache.update`).
        let response = SessionResponse(
            accessToken: "a.b.c",
            expiresIn: 900,
            refreshToken: "r-_1",
            isNewUser: withUser ? true : nil,
            userJSON: withUser ? UserCache().update(user).json : nil
        )
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let expected = NSMutableDictionary(dictionary: [
            "accessToken": "a.b.c", "tokenType": "Bearer", "expiresIn": 900, "refreshToken": "r-_1",
        ])
        if withUser {
            expected["isNewUser"] = true
            expected["user"] = try JSONSerialization.jsonObject(with: encoder.encode(UserResponse(user)))
        }
        let written = try JSONSerialization.jsonObject(with: Data(response.jsonBytes)) as? NSDictionary
        #expect(written == expected)
        let answered = response.response
        #expect(answered.body.contentLength == response.jsonBytes.count)
        #expect(answered.headers[.contentType] == "application/json; charset=utf-8")
        #expect(answered.headers[.cacheControl] == "no-store")
    }
}

@Suite("Server: user cache without the server")
struct UserCacheUnitTests {
    @Test func aCachedAccountIsServedFromMemoryUntilARefreshDropsIt() async throws {
        let store = InMemoryAccountStore()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let user = try await store.signIn(
            AppleSignInFacts(appleUserID: AppleUserID("001.cache.1"), clientID: ClientID("com.example.app")),
            now: start
        ).user
        let cache = UserCache()
        try await cache.refresh(from: store, now: start)
        #expect(try await cache.user(id: user.id, store: store)?.id == user.id, "read from the store once")

        // The store loses the account behind the cache's back: the cache still answers, so no read happened.
        _ = try await store.deleteUser(id: user.id, mode: .delete, appleRevocationDueAt: nil, now: start)
        #expect(try await cache.user(id: user.id, store: store)?.id == user.id, "served from memory")

        // The next refresh learns of the deletion and drops the entry.
        try await cache.refresh(from: store, now: start.addingTimeInterval(5))
        #expect(try await cache.user(id: user.id, store: store) == nil)
    }

    @Test func anUnchangedAccountKeepsItsEncodedUserAndAChangedOneIsEncodedAgain() async throws {
        let store = InMemoryAccountStore()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let user = try await store.signIn(
            AppleSignInFacts(appleUserID: AppleUserID("001.update.1"), clientID: ClientID("com.example.app")),
            now: start
        ).user
        let cache = UserCache()
        let first = cache.update(user)

        // A returning sign-in that changed nothing: the same bytes, not encoded again.
        let again = cache.update(user)
        #expect(again.json == first.json)
        let sameStorage = first.json.withUnsafeReadableBytes { firstBytes in
            again.json.withUnsafeReadableBytes { $0.baseAddress == firstBytes.baseAddress }
        }
        #expect(sameStorage, "the entry kept, not encoded anew")

        // A change to a field the user object does not show still replaces the entry's record.
        var disabled = user
        disabled.disabledAt = start.addingTimeInterval(60)
        #expect(cache.update(disabled).user == disabled)
        #expect(try await cache.user(id: user.id, store: store)?.isDisabled == true)

        // Any change is encoded: a new email and a later sign-in.
        var changed = user
        changed.email = "new@example.com"
        changed.lastSignInAt = start.addingTimeInterval(120)
        let updated = cache.update(changed)
        #expect(updated.json == UserCache.Entry(changed).json)
        #expect(updated.json != first.json)
        #expect(String(buffer: updated.json).contains("new@example.com"))
        #expect(try await cache.entry(id: user.id, store: store)?.user == changed, "the cache holds the change")
    }

    /// `count` accounts signed in to `store` (Apple user ids `001.<name>.1`, …).
    private static func accounts(
        _ count: Int,
        named name: String,
        in store: InMemoryAccountStore,
        at now: Date
    ) async throws -> [UserRecord] {
        var users: [UserRecord] = []
        for index in 1...count {
            let facts = AppleSignInFacts(
                appleUserID: AppleUserID("001.\(name).\(index)"),
                clientID: ClientID("com.example.app")
            )
            users.append(try await store.signIn(facts, now: now).user)
        }
        return users
    }

    @Test func aFullCacheKeepsItsAccountsWhenOneOfThemIsUpdated() async throws {
        let store = InMemoryAccountStore()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let users = try await Self.accounts(2, named: "kept", in: store, at: start)
        let cache = UserCache(capacity: 2)
        for user in users { cache.update(user) }
        cache.update(users[1])  // full, but the account is in it: nothing grows, nothing is dropped
        for user in users {
            _ = try await store.deleteUser(id: user.id, mode: .delete, appleRevocationDueAt: nil, now: start)
        }
        #expect(try await cache.user(id: users[0].id, store: store) != nil, "still answered from memory")
    }

    @Test func aFullCacheStartsOverSoMemoryStaysBounded() async throws {
        let store = InMemoryAccountStore()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let users = try await Self.accounts(3, named: "full", in: store, at: start)
        let cache = UserCache(capacity: 2)
        try await cache.refresh(from: store, now: start)
        for user in users { _ = try await cache.user(id: user.id, store: store) }

        // Behind the cache's back the store loses every account: what is still answered was kept in memory.
        for user in users {
            _ = try await store.deleteUser(id: user.id, mode: .delete, appleRevocationDueAt: nil, now: start)
        }
        var kept: [Int] = []
        for (index, user) in users.enumerated() where try await cache.user(id: user.id, store: store) != nil {
            kept.append(index + 1)
        }
        #expect(kept == [3], "the third account found the cache full, which started over with it alone")
    }
}
