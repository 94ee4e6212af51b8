import AppleSignInClient
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `SiwaClient` against the real server: sign-in, authenticated requests, errors, sign-out.
@Suite("Client: sign-in and requests")
struct SiwaClientTests {
    @Test func signInWithNonceThenCurrentUserAndSend() async throws {
        try await ClientHarness.run { harness in
            let nonce = SignInNonce()
            let credential = try await harness.appleCredential(
                "jane@example.com",
                givenName: "Jane",
                nonce: nonce.hashed
            )
            let store = InMemoryTokenStore()
            let client = harness.client(tokenStore: store)
            #expect(try await client.isSignedIn() == false)

            // The Data? fields of ASAuthorizationAppleIDCredential go in as they are.
            let session = try await client.signIn(
                identityToken: Data(credential.identityToken.utf8),
                authorizationCode: Data(credential.authorizationCode.utf8),
                fullName: credential.fullName,
                email: credential.email,
                nonce: nonce.raw
            )
            #expect(session.isNewUser)
            #expect(session.user.givenName == "Jane")
            #expect(session.user.familyName == "Appleseed")
            #expect(session.user.displayName == "Jane Appleseed")
            #expect(session.user.email == "jane@example.com")
            #expect(session.user.emailVerified)
            #expect(abs(session.user.createdAt.timeIntervalSince(harness.clock.now)) < 2)
            #expect(try await client.isSignedIn())
            #expect(store.read().tokens != nil)
            #expect(store.read().pendingProfiles.isEmpty)  // the server has the name now

            #expect(try await client.currentUser() == session.user)

            let (data, response) = try await client.send(URLRequest(url: harness.baseURL.appending(path: "api/me")))
            #expect(response.statusCode == 200)
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect(object?["id"] as? String == session.user.id.rawValue)
        }
    }

    @Test func returningUserIsNotNew() async throws {
        try await ClientHarness.run { harness in
            let client = harness.client()
            let first = try await client.signIn(try await harness.appleCredential("back@example.com", givenName: "Bo"))
            let again = try await client.signIn(try await harness.appleCredential("back@example.com"))
            #expect(again.isNewUser == false)
            #expect(again.user.id == first.user.id)
            #expect(again.user.givenName == "Bo")
        }
    }

    @Test func refusedCredentialCarriesTheServerCodeAndIsNotRefreshed() async throws {
        try await ClientHarness.run { harness in
            let credential = try await harness.appleCredential("late@example.com", givenName: "Lee", expiresIn: -300)
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            let client = harness.client(tokenStore: store, transport: transport)
            let error = try await #require(throws: SiwaClientError.self) {
                try await client.signIn(credential)
            }
            #expect(error.code == .server)
            #expect(error.status == 401)
            #expect(error.serverCode == "identity_token_expired")
            #expect(error.serverMessage?.isEmpty == false)
            #expect(await transport.log.calls == [.init(path: "/auth/apple/native", status: 401)])
            #expect(store.read().tokens == nil)
            #expect(store.read().pendingProfiles.map(\.givenName) == ["Lee"])  // kept for the next attempt
        }
    }

    @Test func withoutASessionRequestsFailLocally() async throws {
        try await ClientHarness.run { harness in
            let transport = RecordingTransport()
            let client = harness.client(transport: transport)
            let error = try await #require(throws: SiwaClientError.self) { try await client.currentUser() }
            #expect(error.code == .notSignedIn)
            await #expect(throws: SiwaClientError.self) {
                try await client.send(URLRequest(url: harness.baseURL.appending(path: "api/me")))
            }
            let missing = try await #require(throws: SiwaClientError.self) {
                try await client.signIn(
                    identityToken: nil as Data?,
                    authorizationCode: nil,
                    fullName: nil,
                    email: nil,
                    nonce: nil
                )
            }
            #expect(missing.code == .missingIdentityToken)
            #expect(await transport.log.calls.isEmpty)
        }
    }

    @Test func signOutForgetsTheTokensAndRevokesTheServerSession() async throws {
        try await ClientHarness.run { harness in
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            let client = harness.client(tokenStore: store, transport: transport)
            _ = try await client.signIn(try await harness.appleCredential("bye@example.com"))
            let refreshToken = try #require(store.read().tokens?.refreshToken)

            try await client.signOut()
            #expect(store.read().tokens == nil)
            #expect(await transport.log.calls.last == .init(path: "/auth/logout", status: 204))
            let reuse = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
            #expect(reuse.status == .unauthorized)
            #expect(reuse.json["error"] as? String == "refresh_token_revoked")
            let error = try await #require(throws: SiwaClientError.self) { try await client.currentUser() }
            #expect(error.code == .notSignedIn)
        }
    }

    @Test func errorsCompareByCode() {
        let first = SiwaClientError(.server, "one", status: 401, serverCode: "invalid_token")
        let second = SiwaClientError(.server, "two", status: 503)
        #expect(first == second)
        #expect(first != SiwaClientError(.notSignedIn, "one"))
        #expect(!first.description.contains("eyJ"))
        #expect(first.description.contains("invalid_token"))
    }
}
