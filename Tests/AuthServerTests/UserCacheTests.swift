import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

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
