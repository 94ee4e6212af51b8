import AccountStore
import AppleSignIn
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// siwa's own sessions: access tokens, rotating refresh tokens, reuse detection, logout, revocation.
@Suite("Server: sessions")
struct SessionTests {
    @Test func refreshRotatesAndReuseRevokesTheFamily() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("rotate@example.com")
            let firstRefresh = try #require(signIn.json.string("refreshToken"))
            let rotated = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": firstRefresh])
            #expect(rotated.status == .ok)
            let secondRefresh = try #require(rotated.json.string("refreshToken"))
            let secondAccess = try #require(rotated.json.string("accessToken"))
            #expect(secondRefresh != firstRefresh)
            #expect(try await harness.call(.get, "/api/me", bearer: secondAccess).status == .ok)

            // The rotated token again, past the grace window for racing tabs: theft. The whole family dies, including
            // the newest tokens.
            harness.clock.advance(by: 10)
            let reuse = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": firstRefresh])
            #expect(reuse.status == .unauthorized)
            #expect(reuse.json.string("error") == "refresh_token_reused")
            let afterTheft = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": secondRefresh])
            #expect(afterTheft.json.string("error") == "refresh_token_revoked")
            let me = try await harness.call(.get, "/api/me", bearer: secondAccess)
            #expect(me.status == .unauthorized)
            #expect(me.json.string("error") == "session_revoked")
            // Another session of the same user is unaffected.
            let other = try await harness.signIn("rotate@example.com")
            #expect(try await harness.call(.get, "/api/me", bearer: other.json.string("accessToken")).status == .ok)
        }
    }

    @Test func unknownRefreshTokenIsRefused() async throws {
        try await ServerHarness.run { harness in
            let answer = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": "not-a-token"])
            #expect(answer.status == .unauthorized)
            #expect(answer.json.string("error") == "invalid_refresh_token")
            #expect(answer.headers[.wwwAuthenticate] == "Bearer")
        }
    }

    @Test func logoutWithBearerEndsTheSession() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("logout@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let logout = try await harness.call(.post, "/auth/logout", bearer: access)
            #expect(logout.status == .noContent)
            #expect(try await harness.call(.get, "/api/me", bearer: access).json.string("error") == "session_revoked")
            let refresh = try await harness.call(
                .post,
                "/auth/refresh",
                json: ["refreshToken": signIn.json.string("refreshToken")!]
            )
            #expect(refresh.json.string("error") == "refresh_token_revoked")
        }
    }

    @Test func logoutWithRefreshTokenEndsTheSession() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("logout2@example.com")
            let refreshToken = try #require(signIn.json.string("refreshToken"))
            let logout = try await harness.call(.post, "/auth/logout", json: ["refreshToken": refreshToken])
            #expect(logout.status == .noContent)
            let access = try #require(signIn.json.string("accessToken"))
            #expect(try await harness.call(.get, "/api/me", bearer: access).status == .unauthorized)
            let missing = try await harness.call(.post, "/auth/logout", json: [:])
            #expect(missing.status == .badRequest)
        }
    }

    @Test func revocationByAnotherInstanceArrivesWithinSeconds() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("remote@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let id = try #require(signIn.json.user.string("id"))
            let userID = try #require(UserID(id))
            // Another instance revokes in the shared store; this instance learns of it from its refresher.
            _ = try await harness.store.revokeSessions(userID: userID, now: harness.clock.now)
            var refused = false
            for _ in 0..<50 where !refused {
                refused = try await harness.call(.get, "/api/me", bearer: access).status == .unauthorized
                if !refused { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(refused)
        }
    }

    @Test func meRefusesEachKindOfBadToken() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("me@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let none = try await harness.call(.get, "/api/me")
            #expect(none.status == .unauthorized)
            #expect(none.json.string("error") == "missing_token")
            let malformed = try await harness.call(.get, "/api/me", bearer: "abc")
            #expect(malformed.json.string("error") == "invalid_token")
            var parts = access.split(separator: ".").map(String.init)
            parts[1] = Base64URLText.encode(Array(#"{"sub":"x"}"#.utf8))
            let forged = try await harness.call(.get, "/api/me", bearer: parts.joined(separator: "."))
            #expect(forged.json.string("error") == "invalid_token")
            harness.clock.advance(by: 901)  // access tokens live 15 minutes
            let expired = try await harness.call(.get, "/api/me", bearer: access)
            #expect(expired.status == .unauthorized)
            #expect(expired.json.string("error") == "invalid_token")
        }
    }

    @Test func accessTokensVerifyWithThePublishedKeys() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("jwks@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let jwks = try await harness.call(.get, "/.well-known/jwks.json")
            let keys = try #require(jwks.json["keys"] as? [[String: String]])
            let header = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(base64Encoded: base64(String(access.split(separator: ".")[0])))!
                ) as? [String: String]
            )
            #expect(header["alg"] == "ES256")
            let key = try #require(keys.first { $0["kid"] == header["kid"] })
            #expect(key["kty"] == "EC")
            #expect(key["crv"] == "P-256")
            #expect(key["d"] == nil)  // never the private part
            let claims = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(base64Encoded: base64(String(access.split(separator: ".")[1])))!
                ) as? [String: Any]
            )
            #expect(claims["sub"] as? String == signIn.json.user.string("id"))
            #expect(claims["iss"] as? String == "http://localhost:8080")
            #expect(claims["aud"] as? String == "siwa")
            #expect((claims["exp"] as? Int).map { $0 - (claims["iat"] as? Int ?? 0) } == 900)
            #expect(claims["sid"] is String)
            #expect(claims["jti"] is String)
        }
    }

    @Test func keyRotatedByAnotherInstanceIsPickedUpAndOldTokensKeepWorking() async throws {
        try await ServerHarness.run { harness in
            let before = try await harness.signIn("keys@example.com")
            let oldAccess = try #require(before.json.string("accessToken"))
            // Another instance on the same store and data key rotates (what `siwa keys rotate` does).
            let other = try await AccessTokenIssuer(
                configuration: AuthServerConfiguration(),
                store: harness.store,
                sealer: DataSealer(key: harness.dataKey),
                clock: harness.clock
            )
            try await other.rotate()
            let newKid = try #require(try await harness.store.signingKeys().last?.kid)
            var published = false
            for _ in 0..<50 where !published {
                let jwks = try await harness.call(.get, "/.well-known/jwks.json")
                published = (jwks.json["keys"] as? [[String: String]])?.contains { $0["kid"] == newKid } == true
                if !published { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(published)
            let after = try await harness.signIn("keys@example.com")
            let newAccess = try #require(after.json.string("accessToken"))
            let header = try #require(Data(base64Encoded: base64(String(newAccess.split(separator: ".")[0]))))
            #expect(String(decoding: header, as: UTF8.self).contains(newKid))
            #expect(try await harness.call(.get, "/api/me", bearer: newAccess).status == .ok)
            #expect(try await harness.call(.get, "/api/me", bearer: oldAccess).status == .ok)
        }
    }

    /// A rotation moves new tokens to the new key and retires the old one: whoever still holds the old key (a leak, a
    /// backup) cannot sign a token siwa accepts for longer than the old key's last token could live.
    @Test func aRetiredKeySignsNothingThatOutlivesItsLastToken() async throws {
        try await ServerHarness.run { harness in
            let before = try await harness.signIn("retired@example.com")
            let oldAccess = try #require(before.json.string("accessToken"))
            let oldRecord = try #require(try await harness.store.signingKeys().last)
            let sealed = try DataSealer(key: harness.dataKey).open(oldRecord.sealedPrivateKey)
            let oldKey = try P256.Signing.PrivateKey(rawRepresentation: sealed.prefix(32))
            let payload = try #require(Data(base64Encoded: base64(String(oldAccess.split(separator: ".")[1]))))
            let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
            func forged(expiresIn seconds: TimeInterval) throws -> String {
                var forged = claims
                forged["exp"] = Int(harness.clock.now.timeIntervalSince1970 + seconds)
                forged["jti"] = UUID().uuidString
                let header = #"{"alg":"ES256","kid":"\#(oldRecord.kid)","typ":"JWT"}"#
                let input =
                    Base64URLText.encode(Array(header.utf8)) + "."
                    + Base64URLText.encode(Array(try JSONSerialization.data(withJSONObject: forged)))
                let signature = try oldKey.signature(for: Array(input.utf8)).rawRepresentation
                return input + "." + Base64URLText.encode(Array(signature))
            }
            // Before the rotation the key is current: what it signs is accepted (this is what the forgery looks like).
            #expect(try await harness.call(.get, "/api/me", bearer: try forged(expiresIn: 86_400)).status == .ok)
            let other = try await AccessTokenIssuer(
                configuration: AuthServerConfiguration(),
                store: harness.store,
                sealer: DataSealer(key: harness.dataKey),
                clock: harness.clock
            )
            try await other.rotate()
            var rotated = false
            for _ in 0..<50 where !rotated {
                let fresh = try await harness.signIn("retired@example.com")
                let token = try #require(fresh.json.string("accessToken"))
                rotated = token.split(separator: ".").first != oldAccess.split(separator: ".").first
                if !rotated { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(rotated, "the server signs with the new key")
            #expect(try await harness.call(.get, "/api/me", bearer: oldAccess).status == .ok, "its tokens still work")
            let longLived = try await harness.call(.get, "/api/me", bearer: try forged(expiresIn: 86_400))
            #expect(longLived.status == .unauthorized, "a token of the retired key that outlives its last one")
            harness.clock.advance(by: AuthServerConfiguration().accessTokenLifetime + 61)
            let late = try await harness.call(.get, "/api/me", bearer: try forged(expiresIn: 600))
            #expect(late.status == .unauthorized, "a token of the retired key after its last one expired")
        }
    }

    @Test func healthAndReadiness() async throws {
        try await ServerHarness.run { harness in
            let health = try await harness.call(.get, "/healthz")
            let ready = try await harness.call(.get, "/readyz")
            #expect(health.status == .ok)
            #expect(ready.status == .ok)
        }
    }

    private func base64(_ base64URL: String) -> String {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text.append("=") }
        return text
    }
}
