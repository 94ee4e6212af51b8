import AppleSignIn
import HTTPTypes
import SiwaTesting
import Synchronization
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Apple key cache")
struct AppleKeyCacheTests {
    /// A key source whose answers tests script, counting fetches; each fetch takes `delay`.
    final class ScriptedSource: AppleKeySource {
        let fetches = Atomic<Int>(0)
        let answer: Mutex<Result<(AppleKeySet, TimeInterval?), AppleSignInError>>
        let delay: Duration

        init(_ keySet: AppleKeySet, maxAge: TimeInterval? = nil, delay: Duration = .zero) {
            self.answer = Mutex(.success((keySet, maxAge)))
            self.delay = delay
        }

        func set(_ result: Result<(AppleKeySet, TimeInterval?), AppleSignInError>) { answer.withLock { $0 = result } }

        var count: Int { fetches.load(ordering: .relaxed) }

        func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
            fetches.add(1, ordering: .relaxed)
            if delay > .zero { try? await Task.sleep(for: delay) }
            let (keySet, maxAge) = try answer.withLock { $0 }.get()
            return (keySet, maxAge)
        }
    }

    let clock = ManualWallClock(unixTime: 1_750_000_000)

    @Test func knownKeyIsServedFromMemoryAfterOneFetch() async throws {
        let apple = try TestAppleKeys(count: 2)
        let source = ScriptedSource(try apple.keySet())
        let cache = AppleKeyCache(source: source, clock: clock)
        for _ in 0..<10 { _ = try await cache.key(for: apple.keys[1].kid) }
        #expect(source.count == 1)
        #expect(cache.keyIDs == ["test-key-1", "test-key-2"])
    }

    @Test func hundredVerificationsRacingOnAnUnknownKidCauseExactlyOneFetch() async throws {
        let old = try TestAppleKeys(count: 1, kidPrefix: "old-")
        let new = try TestAppleKeys(count: 1, kidPrefix: "new-")
        let source = ScriptedSource(try old.keySet(), delay: .milliseconds(100))
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: "old-1")
        #expect(source.count == 1)

        // Minutes later Apple rotates: the new key appears; 100 tokens signed by it arrive at once.
        clock.advance(by: 120)
        source.set(.success((try new.keySet(), nil)))
        let configuration = try AppleSignInConfiguration(bundleIDs: ["com.example.app"])
        let verifier = IdentityTokenVerifier(configuration: configuration, keys: cache, clock: clock)
        let token = try new.identityToken(TestClaims(aud: "com.example.app", now: clock.now))
        try await withThrowingTaskGroup(of: AppleUserID.self) { group in
            for _ in 0..<100 { group.addTask { try await verifier.verify(token).sub } }
            var verified = 0
            for try await _ in group { verified += 1 }
            #expect(verified == 100)
        }
        #expect(source.count == 2)
    }

    @Test func unknownKidsRefetchAtMostOncePerMinute() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet())
        let cache = AppleKeyCache(source: source, clock: clock, minimumRefetchInterval: 60)
        _ = try await cache.key(for: apple.kid)
        clock.advance(by: 61)
        for index in 0..<50 {
            await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "made-up-\(index)") }
        }
        #expect(source.count == 2)
        clock.advance(by: 30)
        await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "made-up") }
        #expect(source.count == 2)
        clock.advance(by: 31)
        await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "made-up") }
        #expect(source.count == 3)
    }

    @Test func failedRefetchKeepsServingKeysAlreadyHeld() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet(), maxAge: 3600)
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: apple.kid)
        source.set(.failure(AppleSignInError(.appleServerError, "Apple answered 500")))
        clock.advance(by: 7200)  // the set has aged out: the next lookup refetches, fails, and serves the stale key
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 2)
        await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "other") }
        #expect(source.count == 2)
    }

    @Test func maxAgeDecidesWhenTheSetIsFetchedAgain() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet(), maxAge: 600)
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: apple.kid)
        clock.advance(by: 599)
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 1)
        clock.advance(by: 2)
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 2)
    }

    /// Verification takes a key the cache holds fresh without an async call (`freshKey`), and only until the set ages
    /// out: then it goes the way that refetches, exactly as a lookup does.
    @Test func verificationTakesFreshKeysWithoutWaitingAndRefetchesOnceTheSetAgesOut() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet(), maxAge: 600)
        let cache = AppleKeyCache(source: source, clock: clock)
        let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID("com.example.app")])
        let verifier = IdentityTokenVerifier(configuration: configuration, keys: cache, clock: clock)
        let token = try apple.identityToken(TestClaims(aud: "com.example.app", now: clock.now, lifetime: 3_600))
        #expect(cache.freshKey(for: apple.kid) == nil)
        _ = try await verifier.verify(token)
        #expect(source.count == 1)
        #expect(cache.freshKey(for: apple.kid)?.keyID == apple.kid)
        #expect(cache.freshKey(for: "another-kid") == nil)
        clock.advance(by: 599)
        _ = try await verifier.verify(token)
        #expect(source.count == 1)
        #expect(cache.freshKey(for: apple.kid) != nil)
        clock.advance(by: 1)  // the set's expiry itself: no longer fresh
        #expect(cache.freshKey(for: apple.kid) == nil)
        _ = try await verifier.verify(token)
        #expect(source.count == 2)
        #expect(cache.freshKey(for: apple.kid)?.keyID == apple.kid)
    }

    @Test func defaultMaxAgeIsOneDay() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet())
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: apple.kid)
        clock.advance(by: 86_399)
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 1)
        clock.advance(by: 2)
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 2)
    }

    @Test func keysRemovedByAppleStopVerifying() async throws {
        let apple = try TestAppleKeys(count: 2)
        let source = ScriptedSource(try apple.keySet(), maxAge: 60)
        let cache = AppleKeyCache(source: source, clock: clock)
        _ = try await cache.key(for: "test-key-2")
        source.set(.success((try TestAppleKeys(keys: [apple.keys[0]]).keySet(), 60)))
        clock.advance(by: 61)
        await #expect(throws: AppleSignInError.unknownKey) { try await cache.key(for: "test-key-2") }
        _ = try await cache.key(for: "test-key-1")
    }

    @Test func noKeysAtAllIsKeysUnavailableAndRetriedSoon() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet())
        source.set(.failure(AppleSignInError(.timeout, "no answer")))
        let cache = AppleKeyCache(source: source, clock: clock, emptyRetryInterval: 5)
        await #expect(throws: AppleSignInError.keysUnavailable) { try await cache.key(for: apple.kid) }
        await #expect(throws: AppleSignInError.keysUnavailable) { try await cache.key(for: apple.kid) }
        #expect(source.count == 1)
        source.set(.success((try apple.keySet(), nil)))
        clock.advance(by: 6)
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 2)
    }

    @Test func endpointFetchesOverTheTransportAndHonoursCacheControl() async throws {
        let apple = try TestAppleKeys(count: 1)
        let jwks = String(decoding: try apple.jwks(), as: UTF8.self)
        let transport = StubTransport()
        transport.on("/auth/keys") { _ in StubTransport.json(.ok, jwks, headers: [.cacheControl: "public, max-age=120"])
        }
        let endpoint = AppleKeysEndpoint(baseURL: try AppleBaseURL("http://127.0.0.1:9090"), transport: transport)
        let cache = AppleKeyCache(source: endpoint, clock: clock)
        _ = try await cache.key(for: apple.kid)
        clock.advance(by: 119)
        _ = try await cache.key(for: apple.kid)
        #expect(transport.requests(to: "/auth/keys").count == 1)
        clock.advance(by: 2)
        _ = try await cache.key(for: apple.kid)
        let requests = transport.requests(to: "/auth/keys")
        #expect(requests.count == 2)
        #expect(requests[0].request.method == .get)
        #expect(requests[0].request.authority == "127.0.0.1:9090")
    }

    @Test func endpointRetriesServerErrorsThenSucceeds() async throws {
        let apple = try TestAppleKeys(count: 1)
        let jwks = String(decoding: try apple.jwks(), as: UTF8.self)
        let calls = Atomic<Int>(0)
        let transport = StubTransport()
        transport.on("/auth/keys") { _ in
            calls.add(1, ordering: .relaxed).newValue == 1
                ? StubTransport.json(.internalServerError, "{}") : StubTransport.json(.ok, jwks)
        }
        let endpoint = AppleKeysEndpoint(
            baseURL: .apple,
            transport: transport,
            retryPolicy: RetryPolicy(maximumAttempts: 2, initialDelay: .zero)
        )
        _ = try await AppleKeyCache(source: endpoint, clock: clock).key(for: apple.kid)
        #expect(transport.requests(to: "/auth/keys").count == 2)
    }

    @Test func keySetSkipsKeysThatAreNotRS256SigningKeys() throws {
        let apple = try TestAppleKeys(count: 1)
        var json = String(decoding: try apple.jwks(), as: UTF8.self)
        json = json.replacing(
            "{\"keys\":[",
            with:
                #"{"keys":[{"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"},{"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},"#
        )
        let keySet = try AppleKeySet(jwks: Array(json.utf8))
        #expect(Set(keySet.keys.keys) == [apple.kid])
        #expect(throws: AppleSignInError.unexpectedResponse) { try AppleKeySet(jwks: Array(#"{"keys":[]}"#.utf8)) }
        #expect(throws: AppleSignInError.unexpectedResponse) { try AppleKeySet(jwks: Array("<html>".utf8)) }
    }
}

extension AppleKeyCacheTests {
    @Test func failingAppleWithNoRefetchIntervalFailsOnceInsteadOfSpinning() async throws {
        let apple = try TestAppleKeys(count: 1)
        let source = ScriptedSource(try apple.keySet())
        source.set(.failure(AppleSignInError(.appleServerError, "Apple answered 500")))
        let cache = AppleKeyCache(source: source, clock: clock, minimumRefetchInterval: 0)
        await #expect(throws: AppleSignInError.keysUnavailable) { try await cache.key(for: apple.kid) }
        #expect(source.count == 1)
        source.set(.success((try apple.keySet(), nil)))
        _ = try await cache.key(for: apple.kid)
        #expect(source.count == 2)
    }
}
