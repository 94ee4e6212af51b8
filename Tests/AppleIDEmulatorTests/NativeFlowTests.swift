import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The native flow against the emulator, driven by siwa's own `AppleSignIn` client and verifier over HTTP.
@Suite("Emulator: native sign-in, code exchange, refresh, revoke")
struct NativeFlowTests {
    @Test func codeExchangeRefreshAndRevokeLikeApple() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("jane@example.com", givenName: "Jane", nonce: "n-123")
            let verifier = try emulator.verifier()
            let token = try await verifier.verify(
                try #require(credential["identityToken"] as? String),
                expectedNonce: "n-123"
            )
            #expect(token.aud == EmulatorHarness.bundleID)
            #expect(token.sub.rawValue == credential["user"] as? String)
            #expect(token.email == "jane@example.com")
            #expect(token.emailVerified == true)
            #expect(token.isPrivateEmail == false)
            #expect(token.realUserStatus == .likelyReal)
            #expect(token.nonceSupported == true)
            #expect(token.expiresAt.timeIntervalSince(token.issuedAt) == 600)

            let apple = try emulator.client()
            let code = try #require(credential["authorizationCode"] as? String)
            let tokens = try await apple.exchange(code: code, for: token)
            let refreshToken = try #require(tokens.refreshToken)
            #expect(tokens.verifiedIDToken?.sub == token.sub)
            #expect(tokens.expiresIn == 3600)
            await #expect(throws: AppleSignInError.invalidGrant) { try await apple.exchange(code: code, for: token) }

            guard case .valid(let refreshed) = try await apple.validate(refreshToken: refreshToken, clientID: token.aud)
            else {
                Issue.record("a fresh refresh token must be valid")
                return
            }
            #expect(refreshed.refreshToken == nil)  // Apple's refresh tokens do not rotate
            try await apple.revoke(token: refreshToken, clientID: token.aud)
            guard case .revoked = try await apple.validate(refreshToken: refreshToken, clientID: token.aud) else {
                Issue.record("a revoked refresh token must be refused")
                return
            }
            try await apple.revoke(token: "unknown-token", clientID: token.aud)  // 200 for unknown tokens too

            let log = try await emulator.log()
            #expect(log.contains { $0["endpoint"] as? String == "revoke" && $0["outcome"] as? String == "200" })
            #expect(
                log.contains { $0["grantType"] as? String == "authorization_code" && $0["outcome"] as? String == "200" }
            )
            #expect(
                log.contains {
                    $0["grantType"] as? String == "refresh_token" && $0["outcome"] as? String == "invalid_grant"
                }
            )
        }
    }

    @Test func tokenHeadersCarryAlgAndKidAndNoTyp() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("header@example.com")
            #expect(try await emulator.notify("header@example.com", "email-disabled").status == 200)
            let body = try #require(emulator.notifications.all.first)
            let payload = try #require(
                (try JSONSerialization.jsonObject(with: Data(body)) as? [String: String])?["payload"]
            )
            let keys = try await emulator.send(.get, "/auth/keys")
            let kid = try #require(keys.body.firstMatch(of: /"kid":"([^"]+)"/)?.1)
            for token in [try #require(credential["identityToken"] as? String), payload] {
                let header = try #require(token.split(separator: ".").first)
                var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
                let fields = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: base64)))
                let object = try #require(fields as? [String: String])
                #expect(object == ["alg": "RS256", "kid": String(kid)], "Apple's headers have no typ")
            }
        }
    }

    @Test func firstAuthorizationCarriesNameAndEmailLaterOnesDoNot() async throws {
        try await EmulatorHarness.run { emulator in
            let first = try await emulator.nativeSignIn("first@example.com", givenName: "Fiona")
            #expect(first["email"] as? String == "first@example.com")
            #expect((first["fullName"] as? [String: Any])?["givenName"] as? String == "Fiona")
            let second = try await emulator.nativeSignIn("first@example.com")
            #expect(second["email"] is NSNull)
            #expect(second["fullName"] is NSNull)
            #expect(second["user"] as? String == first["user"] as? String)
            // The identity token still carries the email every time.
            let token = try await emulator.verifier().verify(try #require(second["identityToken"] as? String))
            #expect(token.email == "first@example.com")
        }
    }

    /// An app that does not request the email scope: as at Apple, neither the credential nor any of the team's later
    /// identity tokens carry an email, even when a later request asks for it (the first authorization decides).
    @Test func withoutTheEmailScopeNoTokenCarriesAnEmail() async throws {
        try await EmulatorHarness.run { emulator in
            let first = try await emulator.nativeSignIn("quiet@example.com", givenName: "Quinn", scopes: ["name"])
            #expect(first["email"] is NSNull)
            #expect((first["fullName"] as? [String: Any])?["givenName"] as? String == "Quinn")
            let verifier = try emulator.verifier()
            let token = try await verifier.verify(try #require(first["identityToken"] as? String))
            #expect(token.email == nil)
            #expect(token.emailVerified == nil)
            #expect(token.isPrivateEmail == nil)
            // Absent, as Apple leaves them out, not null.
            let parts = try #require(first["identityToken"] as? String).split(separator: ".")
            var base64 = String(parts[1]).replacing("-", with: "+").replacing("_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            let payload = try #require(Data(base64Encoded: base64))
            let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
            #expect(claims["email"] == nil && claims["email_verified"] == nil && claims["is_private_email"] == nil)

            let later = try await emulator.nativeSignIn("quiet@example.com", scopes: ["name", "email"])
            #expect(try await verifier.verify(try #require(later["identityToken"] as? String)).email == nil)
            // Neither scope: no name either.
            let nameless = try await emulator.nativeSignIn("nameless@example.com", givenName: "Nina", scopes: [])
            #expect(nameless["fullName"] is NSNull)
            #expect(nameless["email"] is NSNull)
        }
    }

    @Test func hiddenEmailIsAStableRelayAddressPerTeam() async throws {
        try await EmulatorHarness.run { emulator in
            let first = try await emulator.nativeSignIn("private@example.com", hideEmail: true)
            let relay = try #require(first["email"] as? String)
            #expect(relay.hasSuffix("@privaterelay.appleid.com"))
            let again = try await emulator.nativeSignIn("private@example.com")
            let token = try await emulator.verifier().verify(try #require(again["identityToken"] as? String))
            #expect(token.email == relay)
            #expect(token.isPrivateEmail == true)
            #expect(token.emailIsPrivateRelay)
        }
    }

    @Test func subjectIsStableWithinATeamAndDiffersAcrossTeams() async throws {
        try await EmulatorHarness.run { emulator in
            let app = try await emulator.nativeSignIn("same@example.com")
            let web = try await emulator.nativeSignIn("same@example.com", clientID: EmulatorHarness.servicesID)
            let otherTeam = try await emulator.nativeSignIn(
                "same@example.com",
                clientID: EmulatorHarness.otherTeamBundleID
            )
            #expect(app["user"] as? String == web["user"] as? String)
            #expect(app["user"] as? String != otherTeam["user"] as? String)
            #expect(otherTeam["email"] as? String == "same@example.com")  // first authorization for that team
        }
    }

    @Test func expiredIdentityTokenOnRequest() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("late@example.com", expiresIn: -120)
            await #expect(throws: AppleSignInError.expired) {
                try await emulator.verifier().verify(try #require(credential["identityToken"] as? String))
            }
        }
    }

    @Test func codeExpiresAfterFiveMinutesAndIsBoundToItsClient() async throws {
        try await EmulatorHarness.run { emulator in
            let verifier = try emulator.verifier()
            let apple = try emulator.client()
            let stale = try await emulator.nativeSignIn("codes@example.com")
            let staleToken = try await verifier.verify(try #require(stale["identityToken"] as? String))
            emulator.clock.advance(by: 301)
            let fresh = try await emulator.nativeSignIn("codes@example.com")
            await #expect(throws: AppleSignInError.invalidGrant) {
                try await apple.exchange(code: try #require(stale["authorizationCode"] as? String), for: staleToken)
            }
            // A code issued to the bundle id, exchanged as the Services ID (with a redirect_uri): refused.
            await #expect(throws: AppleSignInError.invalidGrant) {
                try await apple.exchange(
                    code: try #require(fresh["authorizationCode"] as? String),
                    clientID: EmulatorHarness.servicesID,
                    redirectURI: EmulatorHarness.redirectURI
                )
            }
        }
    }

    @Test func clientSecretSignedByAnotherKeyIsInvalidClient() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("secret@example.com")
            let token = try await emulator.verifier().verify(try #require(credential["identityToken"] as? String))
            let impostor = try emulator.client(signingKey: P256.Signing.PrivateKey())
            let error = await #expect(throws: AppleSignInError.invalidClient) {
                try await impostor.exchange(code: try #require(credential["authorizationCode"] as? String), for: token)
            }
            #expect(error?.reason.contains("com.example.app") == true)
            // Right key, wrong team id in the secret.
            let wrongTeam = try emulator.client(try emulator.configuration(teamID: EmulatorHarness.otherTeamID))
            await #expect(throws: AppleSignInError.invalidClient) {
                try await wrongTeam.revoke(token: "anything", clientID: EmulatorHarness.bundleID)
            }
            // The code survived the failed attempts (client authentication comes first).
            let tokens = try await emulator.client().exchange(
                code: try #require(credential["authorizationCode"] as? String),
                for: token
            )
            #expect(tokens.refreshToken != nil)
        }
    }

    @Test func appleErrorShapesForBadRequests() async throws {
        try await EmulatorHarness.run { emulator in
            let noGrant = try await emulator.send(
                .post,
                "/auth/token",
                body: "client_id=com.example.app",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(noGrant.status == 400)
            #expect(noGrant.body.contains(#""error":"invalid_request""#))
            let badGrant = try await emulator.send(
                .post,
                "/auth/token",
                body: "grant_type=password&client_id=com.example.app",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(badGrant.body.contains(#""error":"unsupported_grant_type""#))
            let noSecret = try await emulator.send(
                .post,
                "/auth/token",
                body: "grant_type=authorization_code&client_id=com.example.app&code=x",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(noSecret.body.contains(#""error":"invalid_request""#))
            let unknownClient = try await emulator.send(
                .post,
                "/auth/token",
                body: "grant_type=authorization_code&client_id=com.nobody&client_secret=x&code=x",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(unknownClient.body.contains(#""error":"invalid_client""#))
            let badJSON = try await emulator.send(.post, "/emulator/native-sign-in", body: "{\"clientI")
            #expect(badJSON.status == 400)
            #expect(badJSON.body.contains(#""error":"invalid_request""#))
            #expect(badJSON.body.contains(#""message""#))
        }
    }
}
