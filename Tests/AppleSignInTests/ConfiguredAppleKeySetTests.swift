import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A copy of Apple's key set from configuration: the fallback while Apple's key endpoint fails, or used instead of it.
@Suite("Configured Apple key set")
struct ConfiguredAppleKeySetTests {
    typealias ScriptedSource = AppleKeyCacheTests.ScriptedSource

    let clock = ManualWallClock(unixTime: 1_750_000_000)
    let appleDown = AppleSignInError(.appleServerError, "Apple answered 500")

    @Test func theFallbackServesTheConfiguredKeysWhileTheEndpointFailsAtStart() async throws {
        let configured = try TestAppleKeys(count: 1, kidPrefix: "pinned-")
        let endpoint = ScriptedSource(try configured.keySet())
        endpoint.set(.failure(appleDown))
        let cache = AppleKeyCache(
            source: ConfiguredAppleKeySet(keySet: try configured.keySet()).keySource(fetching: endpoint),
            clock: clock
        )
        let key = try await cache.key(for: configured.kid)
        #expect(key.keyID == configured.kid)
        #expect(endpoint.count == 1)
        // Without the configured set the same failure leaves no key at all.
        let bare = AppleKeyCache(source: endpoint, clock: clock)
        await #expect(throws: AppleSignInError.keysUnavailable) { try await bare.key(for: configured.kid) }
    }

    @Test func theFallbackKeepsApplesKeysAndGivesWayWhenTheEndpointAnswers() async throws {
        let configured = try TestAppleKeys(count: 1, kidPrefix: "pinned-")
        let apple = try TestAppleKeys(count: 1, kidPrefix: "apple-")
        let endpoint = ScriptedSource(try apple.keySet(), maxAge: 3600)
        let source = FallbackAppleKeySource(primary: endpoint, fallback: try configured.keySet(), retryInterval: 300)
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: apple.kid)
        #expect(cache.keyIDs == [apple.kid])

        // Apple's set ages out while Apple is down: its keys stay, the configured ones join them.
        clock.advance(by: 3601)
        endpoint.set(.failure(appleDown))
        _ = try await cache.key(for: configured.kid)
        #expect(cache.keyIDs == [apple.kid, configured.kid])
        _ = try await cache.key(for: apple.kid)

        // After the retry interval Apple answers again: only its keys count.
        clock.advance(by: 301)
        endpoint.set(.success((try apple.keySet(), 3600)))
        _ = try await cache.key(for: apple.kid)
        #expect(cache.keyIDs == [apple.kid])
        #expect(endpoint.count == 3)
    }

    @Test func insteadNeverCallsTheEndpoint() async throws {
        let configured = try TestAppleKeys(count: 2, kidPrefix: "pinned-")
        let endpoint = ScriptedSource(try TestAppleKeys(count: 1).keySet())
        var apple = try AppleSignInConfiguration(bundleIDs: ["com.example.app"])
        apple.configuredKeySet = ConfiguredAppleKeySet(keySet: try configured.keySet(), use: .instead)
        let cache = AppleKeyCache(
            source: apple.keySource(fetching: endpoint),
            clock: clock,
            minimumRefetchInterval: 0
        )
        _ = try await cache.key(for: configured.keys[1].kid)
        await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "test-key-1") }
        clock.advance(by: 2 * 86_400)
        _ = try await cache.key(for: configured.kid)
        #expect(endpoint.count == 0)
    }

    @Test(arguments: [
        ("not json", "not JSON"),
        (#"{"kids": []}"#, "no 'keys' array"),
        (#"{"keys": []}"#, "empty"),
        (#"{"keys": [{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"}]}"#, "key 1: not an RSA key"),
        (
            #"{"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "n": "AQAB", "e": "AQAB"}]}"#,
            "key 1: has no \"kid\""
        ),
        (#"{"keys": [{"kty": "RSA", "kid": "short", "n": "AQAB", "e": "AQAB"}]}"#, "key 1: kid 'short'"),
    ])
    func aConfiguredSetWithAnUnusableKeyIsRefusedSayingWhich(jwks: String, reason: String) throws {
        let error = #expect(throws: AppleSignInError.invalidConfiguration) {
            try AppleKeySet(configuredJWKS: Array(jwks.utf8))
        }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "")")
    }

    @Test func aConfiguredSetRefusesAKeyWithoutKidThatApplesReaderWouldSkip() throws {
        let apple = try TestAppleKeys(count: 2)
        let json = String(decoding: try apple.jwks(), as: UTF8.self).replacing("\"kid\":\"test-key-2\",", with: "")
        #expect(try AppleKeySet(jwks: Array(json.utf8)).keys.count == 1)
        let error = #expect(throws: AppleSignInError.invalidConfiguration) {
            try AppleKeySet(configuredJWKS: Array(json.utf8))
        }
        #expect(error?.reason.hasPrefix("key 2: has no \"kid\"") == true, "\(error?.reason ?? "")")
        #expect(try AppleKeySet(configuredJWKS: try apple.jwks()).keys.count == 2)
    }
}
