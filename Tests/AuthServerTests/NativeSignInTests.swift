import AccountStore
import AppleSignIn
import AppleSignInAsyncHTTPClient
import AsyncHTTPClient
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// Native-app sign-in end to end: the emulator as Apple, real HTTP on loopback, the in-memory store.
@Suite("Server: native sign-in")
struct NativeSignInTests {
    @Test func newUserThenReturningUserKeepsTheFirstName() async throws {
        try await ServerHarness.run { harness in
            let first = try await harness.signIn("jane@example.com", givenName: "Jane")
            #expect(first.status == .ok)
            #expect(first.json["isNewUser"] as? Bool == true)
            #expect(first.json["tokenType"] as? String == "Bearer")
            #expect(first.json["expiresIn"] as? Int == 900)
            #expect(first.json.user.string("givenName") == "Jane")
            #expect(first.json.user.string("familyName") == "Appleseed")
            #expect(first.json.user.string("displayName") == "Jane Appleseed")
            #expect(first.json.user.string("email") == "jane@example.com")
            #expect(first.json.user["emailVerified"] as? Bool == true)

            let again = try await harness.signIn("jane@example.com")  // Apple sends no name the second time
            #expect(again.status == .ok)
            #expect(again.json["isNewUser"] as? Bool == false)
            #expect(again.json.user.string("id") == first.json.user.string("id"))
            #expect(again.json.user.string("givenName") == "Jane")

            let me = try await harness.call(.get, "/api/me", bearer: again.json.string("accessToken"))
            #expect(me.status == .ok)
            #expect(me.json.string("id") == first.json.user.string("id"))
            #expect(me.json.string("givenName") == "Jane")
            #expect(me.json.string("createdAt") != nil)
        }
    }

    /// An app that asks Apple for the name only: its tokens carry no email, ever. The account is keyed by Apple's
    /// `sub`, has no email, and keeps signing in as the same account.
    @Test func anAppleIDThatSharesNoEmailSignsInAndKeepsItsAccount() async throws {
        try await ServerHarness.run { harness in
            let first = try await harness.signIn("private@example.com", givenName: "Pat", scopes: ["name"])
            #expect(first.status == .ok)
            #expect(first.json["isNewUser"] as? Bool == true)
            #expect(first.json.user["email"] == nil || first.json.user["email"] is NSNull)
            #expect(first.json.user.string("givenName") == "Pat")

            let again = try await harness.signIn("private@example.com", scopes: ["name"])
            #expect(again.status == .ok)
            #expect(again.json["isNewUser"] as? Bool == false)
            #expect(again.json.user.string("id") == first.json.user.string("id"))
            let me = try await harness.call(.get, "/api/me", bearer: again.json.string("accessToken"))
            #expect(me.status == .ok)
            #expect(me.json["email"] == nil || me.json["email"] is NSNull)
            #expect(me.json.string("givenName") == "Pat")
        }
    }

    @Test func hiddenEmailIsMarkedPrivate() async throws {
        try await ServerHarness.run { harness in
            let answer = try await harness.signIn("hidden@example.com", hideEmail: true)
            #expect(answer.status == .ok)
            #expect(answer.json.user.string("email")?.hasSuffix("@privaterelay.appleid.com") == true)
            #expect(answer.json.user["isPrivateEmail"] as? Bool == true)
        }
    }

    @Test func authorizationCodeIsExchangedAndAppleTokenKeptSealed() async throws {
        try await ServerHarness.run { harness in
            let answer = try await harness.signIn("code@example.com")
            let id = try #require(answer.json.user.string("id"))
            let userID = try #require(UserID(id))
            let stored = try #require(try await harness.store.appleToken(userID: userID))
            #expect(stored.clientID == ClientID(ServerHarness.bundleID))
            // Sealed with the data key: opening it gives Apple's refresh token, which the emulator accepts.
            let refreshToken = String(
                decoding: try DataSealer(key: harness.dataKey).open(stored.encryptedRefreshToken),
                as: UTF8.self
            )
            #expect(refreshToken.hasPrefix("r"))
            #expect(!String(decoding: stored.encryptedRefreshToken, as: UTF8.self).contains(refreshToken))
            let log = try await harness.emulatorLog()
            #expect(
                log.contains { $0["grantType"] as? String == "authorization_code" && $0["outcome"] as? String == "200" }
            )
        }
    }

    @Test func codeExchangeFailureStillSignsIn() async throws {
        try await ServerHarness.run { harness in
            try await harness.emulator("/emulator/faults", ["endpoint": "token", "mode": "error"])
            let answer = try await harness.signIn("fault@example.com")
            #expect(answer.status == .ok)
            let id = try #require(answer.json.user.string("id"))
            let userID = try #require(UserID(id))
            #expect(try await harness.store.appleToken(userID: userID) == nil)
            let log = try await harness.emulatorLog()
            #expect(log.contains { $0["endpoint"] as? String == "token" && $0["outcome"] as? String == "fault: 500" })
        }
    }

    @Test func nonceIsChecked() async throws {
        try await ServerHarness.run { harness in
            let credential = try await harness.appleCredential("nonce@example.com", nonce: sha256Hex("raw-nonce"))
            let token = try #require(credential.string("identityToken"))
            let wrong = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": token, "nonce": "other"]
            )
            #expect(wrong.status == .unauthorized)
            #expect(wrong.json.string("error") == "identity_token_nonce_mismatch")
            let right = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": token, "nonce": "raw-nonce"]
            )
            #expect(right.status == .ok)
        }
    }

    @Test func tokenOfAnotherAppIsRefused() async throws {
        try await ServerHarness.run { harness in
            let credential = try await harness.appleCredential(
                "other@example.com",
                clientID: ServerHarness.otherTeamBundleID
            )
            let answer = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": try #require(credential.string("identityToken"))]
            )
            #expect(answer.status == .unauthorized)
            #expect(answer.json.string("error") == "identity_token_audience_mismatch")
            #expect(answer.json.string("message")?.contains("org.other.app") == true)
        }
    }

    @Test func expiredIdentityTokenIsRefused() async throws {
        try await ServerHarness.run { harness in
            let credential = try await harness.appleCredential("late@example.com", expiresIn: -300)
            let answer = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": try #require(credential.string("identityToken"))]
            )
            #expect(answer.status == .unauthorized)
            #expect(answer.json.string("error") == "identity_token_expired")
        }
    }

    @Test func twentyConcurrentFirstSignInsCreateOneAccount() async throws {
        try await ServerHarness.run { harness in
            var tokens: [String] = []
            for _ in 0..<20 {
                tokens.append(
                    try #require(try await harness.appleCredential("race@example.com").string("identityToken"))
                )
            }
            // Each answer as (user id, isNewUser): JSON objects are not Sendable. Sent through a client with a
            // connection for each request, so that they reach the server at once (the harness's client has one
            // connection, on which requests are pipelined and answered one after the other). With fewer connections
            // than requests the rest would wait in the client's pool, and a slow machine's wait would exceed the
            // pool's connect timeout.
            let server = try AppleBaseURL(harness.serverURL)
            var configuration = AsyncHTTPClientTransport.clientConfiguration(connectTimeout: .seconds(60))
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = tokens.count
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            let transport = AsyncHTTPClientTransport(client: client)
            let answers: [(String?, Bool?)]
            do {
                answers = try await withThrowingTaskGroup(of: (String?, Bool?).self) { group in
                    for token in tokens {
                        group.addTask {
                            var request = HTTPRequest(
                                method: .post,
                                scheme: server.scheme,
                                authority: server.authority,
                                path: "/auth/apple/native"
                            )
                            request.headerFields[.contentType] = "application/json"
                            let body = try JSONSerialization.data(withJSONObject: ["identityToken": token])
                            let answer = try await transport.send(
                                request,
                                body: Array(body),
                                timeout: .seconds(60)
                            )
                            #expect(answer.response.status == .ok)
                            let json =
                                (try JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
                            return (json.user.string("id"), json["isNewUser"] as? Bool)
                        }
                    }
                    var answers: [(String?, Bool?)] = []
                    for try await answer in group { answers.append(answer) }
                    return answers
                }
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
            #expect(answers.count == 20)
            #expect(Set(answers.compactMap(\.0)).count == 1)
            #expect(answers.filter { $0.1 == true }.count == 1)
            #expect(try await harness.store.users(limit: 100, after: nil).count == 1)
        }
    }

    @Test func badRequestsGetJSONErrorsNamingTheProblem() async throws {
        try await ServerHarness.run { harness in
            let missing = try await harness.call(.post, "/auth/apple/native", json: ["authorizationCode": "x"])
            #expect(missing.status == .badRequest)
            #expect(missing.json.string("error") == "missing_field")
            #expect(missing.json.string("message")?.contains("identityToken") == true)
            let wrongType = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": 42])
            #expect(wrongType.json.string("error") == "invalid_field")
            let notJSON = try await harness.call(.post, "/auth/apple/native", rawBody: "{nope")
            #expect(notJSON.status == .badRequest)
            #expect(notJSON.json.string("error") == "invalid_json")
            let garbage = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": "a.b.c"])
            #expect(garbage.status == .unauthorized)
            #expect(garbage.json.string("error") == "identity_token_malformed")
            let huge = try await harness.call(
                .post,
                "/auth/apple/native",
                rawBody: #"{"identityToken":""# + String(repeating: "a", count: 70_000) + #""}"#
            )
            #expect(huge.status == .contentTooLarge)
            #expect(huge.json.string("error") == "body_too_large")
            #expect(try await harness.store.users(limit: 10, after: nil).isEmpty)
        }
    }

    @Test func serverNonceMakesATokenSingleUse() async throws {
        let configuration = AuthServerConfiguration(requireServerNonce: true, authRateLimit: nil)
        try await ServerHarness.run(configuration: configuration) { harness in
            let issued = try await harness.call(.post, "/auth/apple/nonce")
            #expect(issued.status == .ok)
            let nonce = try #require(issued.json.string("nonce"))
            #expect(issued.json["expiresIn"] as? Int == 600)
            let credential = try await harness.appleCredential("replay@example.com", nonce: sha256Hex(nonce))
            let token = try #require(credential.string("identityToken"))
            let first = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": token, "nonce": nonce]
            )
            #expect(first.status == .ok)
            let replay = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": token, "nonce": nonce]
            )
            #expect(replay.status == .unauthorized)
            #expect(replay.json.string("error") == "identity_token_nonce_mismatch")
            let noNonce = try await harness.appleCredential("replay@example.com")
            let refused = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": try #require(noNonce.string("identityToken"))]
            )
            #expect(refused.json.string("error") == "identity_token_nonce_missing")
        }
    }

    @Test func rateLimitAnswers429WithRetryAfter() async throws {
        // One token per 1,000 s: however slowly a loaded test machine sends the four requests, nothing refills.
        let configuration = AuthServerConfiguration(authRateLimit: .init(requestsPerSecond: 0.001, burst: 3))
        try await ServerHarness.run(configuration: configuration) { harness in
            for _ in 0..<3 {
                #expect(try await harness.call(.post, "/auth/apple/nonce").status == .ok)
            }
            let limited = try await harness.call(.post, "/auth/apple/nonce")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.json.string("error") == "rate_limited")
            // Up to 1,000 s for the next token, less what refilled while the test ran.
            let retryAfter = limited.headers[.retryAfter].flatMap { Int($0) }
            #expect(
                retryAfter.map { (900...1000).contains($0) } == true,
                "Retry-After: \(String(describing: retryAfter))"
            )
            #expect(try await harness.call(.get, "/healthz").status == .ok)  // only /auth/* is limited
        }
    }
}

/// Lower-case hex SHA-256, as apps send a hashed nonce to Apple.
func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
}
