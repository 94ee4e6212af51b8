import AppleSignInClient
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The 401 → refresh → retry path, against the real server with 60-second access tokens and a manual clock.
@Suite("Client: token refresh")
struct TokenRefreshTests {
    @Test func tenConcurrentRequestsWithAnExpiredTokenShareOneRefresh() async throws {
        try await ClientHarness.run(accessTokenLifetime: 60) { harness in
            let store = InMemoryTokenStore()
            // The refresh is held until all ten requests have had their 401, so all ten wait on it.
            let transport = RecordingTransport(holdRefreshUntilUnauthorized: 10)
            let client = harness.client(tokenStore: store, transport: transport)
            let user = try await signIn(client, harness, "many@example.com")
            let before = try #require(store.read().tokens)
            harness.clock.advance(by: 61)

            let url = harness.baseURL.appending(path: "api/me")
            // Every outcome is collected (none cancelled), so a failure is reported rather than cut short.
            let outcomes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask { await outcome(of: client, url) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes == Array(repeating: "200", count: 10))
            #expect(await transport.log.count("/auth/refresh") == 1)
            #expect(await transport.log.count("/api/me", status: 401) == 10)
            #expect(await transport.log.count("/api/me", status: 200) == 10)
            let after = try #require(store.read().tokens)
            #expect(after.refreshToken != before.refreshToken)
            #expect(after.accessToken != before.accessToken)
            #expect(try await client.currentUser().id == user.id)
            #expect(await transport.log.count("/auth/refresh") == 1)
        }
    }

    @Test func a401ThatArrivesAfterTheRefreshUsesTheNewTokens() async throws {
        try await ClientHarness.run(accessTokenLifetime: 60) { harness in
            // Two requests leave with the expired token; the first 401 comes back only after the other request's
            // 401 has been refreshed. Refreshing again would present a rotated token and end the session.
            let transport = RecordingTransport(apiBarrier: 2, delayFirstUnauthorizedUntilRefreshed: true)
            let client = harness.client(transport: transport)
            _ = try await signIn(client, harness, "late401@example.com")
            harness.clock.advance(by: 61)

            let url = harness.baseURL.appending(path: "api/me")
            async let first = outcome(of: client, url)
            async let second = outcome(of: client, url)
            #expect(await [first, second] == ["200", "200"])
            #expect(await transport.log.count("/api/me", status: 401) == 2)
            #expect(await transport.log.count("/auth/refresh") == 1)
        }
    }

    @Test func a401AfterASuccessfulRefreshIsReturnedNotRetried() async throws {
        try await ClientHarness.run { harness in
            let transport = RecordingTransport()
            let client = harness.client(transport: transport)
            _ = try await signIn(client, harness, "stubborn@example.com")
            let signInCalls = await transport.log.calls.count
            await transport.log.fail("/api/me", status: 401, count: 5)  // a resource that refuses every token

            let (_, response) = try await client.send(URLRequest(url: harness.baseURL.appending(path: "api/me")))
            #expect(response.statusCode == 401)
            #expect(
                await transport.log.calls.dropFirst(signInCalls) == [
                    .init(path: "/api/me", status: 401), .init(path: "/auth/refresh", status: 200),
                    .init(path: "/api/me", status: 401),
                ]
            )
            #expect(try await client.isSignedIn())  // the refresh worked: the session is kept
        }
    }

    @Test func reusedRefreshTokenSignsOutWithoutLooping() async throws {
        try await ClientHarness.run(accessTokenLifetime: 60) { harness in
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            let client = harness.client(tokenStore: store, transport: transport)
            _ = try await signIn(client, harness, "stolen@example.com")
            let signInCalls = await transport.log.calls.count
            // A thief uses the refresh token first; the client's copy is now a rotated token.
            let stolen = try #require(store.read().tokens?.refreshToken)
            let thief = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": stolen])
            #expect(thief.status == .ok)
            harness.clock.advance(by: 61)

            let error = try await #require(throws: SiwaClientError.self) { try await client.currentUser() }
            #expect(error.code == .notSignedIn)
            #expect(error.serverCode == "refresh_token_reused")
            #expect(store.read().tokens == nil)
            #expect(
                await transport.log.calls.dropFirst(signInCalls) == [
                    .init(path: "/api/me", status: 401), .init(path: "/auth/refresh", status: 401),
                ]
            )
            // The reuse ended the thief's session too; the client stays signed out without calling the server.
            let thiefAgain = try await harness.call(
                .post,
                "/auth/refresh",
                json: ["refreshToken": try #require(thief.json["refreshToken"] as? String)]
            )
            #expect(thiefAgain.json["error"] as? String == "refresh_token_revoked")
            await #expect(throws: SiwaClientError.self) { try await client.currentUser() }
            #expect(await transport.log.calls.count == signInCalls + 2)
        }
    }

    @Test func sessionEndedElsewhereSignsOutAfterOneRefresh() async throws {
        try await ClientHarness.run { harness in
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            let client = harness.client(tokenStore: store, transport: transport)
            _ = try await signIn(client, harness, "elsewhere@example.com")
            let signInCalls = await transport.log.calls.count
            // Signed out from another device: the server revokes the session; the access token is still unexpired.
            let refreshToken = try #require(store.read().tokens?.refreshToken)
            let logout = try await harness.call(.post, "/auth/logout", json: ["refreshToken": refreshToken])
            #expect(logout.status == .noContent)

            let error = try await #require(throws: SiwaClientError.self) {
                try await client.send(URLRequest(url: harness.baseURL.appending(path: "api/me")))
            }
            #expect(error.code == .notSignedIn)
            #expect(error.serverCode == "refresh_token_revoked")
            #expect(store.read().tokens == nil)
            #expect(
                await transport.log.calls.dropFirst(signInCalls) == [
                    .init(path: "/api/me", status: 401), .init(path: "/auth/refresh", status: 401),
                ]
            )
        }
    }

    @Test func failedRefreshThatIsNotARefusalKeepsTheSession() async throws {
        try await ClientHarness.run(accessTokenLifetime: 60) { harness in
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            let client = harness.client(tokenStore: store, transport: transport)
            let user = try await signIn(client, harness, "flaky@example.com")
            harness.clock.advance(by: 61)
            await transport.log.fail("/auth/refresh", status: 503)

            let error = try await #require(throws: SiwaClientError.self) { try await client.currentUser() }
            #expect(error.code == .server)
            #expect(error.status == 503)
            #expect(error.serverCode == "unavailable")
            #expect(store.read().tokens != nil)

            #expect(try await client.currentUser().id == user.id)  // the next request refreshes and succeeds
            #expect(await transport.log.count("/auth/refresh") == 2)
        }
    }

    /// The status of `GET url` through `client`, or the error it threw: never throws, so that concurrent requests
    /// all finish (none is cancelled mid-flight) and a failure is reported in full.
    private func outcome(of client: SiwaClient, _ url: URL) async -> String {
        do {
            return "\(try await client.send(URLRequest(url: url)).1.statusCode)"
        } catch {
            return "\(error)"
        }
    }

    private func signIn(_ client: SiwaClient, _ harness: ClientHarness, _ email: String) async throws -> User {
        let credential = try await harness.appleCredential(email)
        return try await client.signIn(
            identityToken: credential.identityToken,
            authorizationCode: credential.authorizationCode,
            fullName: nil,
            email: nil,
            nonce: nil
        ).user
    }
}
