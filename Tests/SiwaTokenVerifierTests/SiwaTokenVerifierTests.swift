import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTokenVerifier
import SiwaTokenVerifierAsyncHTTPClient
import SiwaTokenVerifierHummingbird
import Synchronization
import Testing

/// The verifier against an issuer served over real HTTP on loopback (discovery document and key set, both counted),
/// with tokens signed here: every check, key rotation, a flood of unknown `kid`s, an issuer that lies or goes away,
/// and the Hummingbird authenticator. `SiwaTokenVerifierServerTests` (AuthServerTests) checks it against siwa itself.
@Suite("siwa token verifier")
struct SiwaTokenVerifierTests {
    /// The issuer: its keys (changeable), whether it answers, and what it was asked.
    final class Issuer: Sendable {
        struct State {
            var url = ""
            var keys: [String: P256.Signing.PrivateKey] = [:]
            var discoveryIssuer: String?
            var down = false
            var discoveryFetches = 0
            var keySetFetches = 0
        }
        let state = Mutex(State())

        func add(_ kid: String) -> P256.Signing.PrivateKey {
            let key = P256.Signing.PrivateKey()
            state.withLock { $0.keys[kid] = key }
            return key
        }

        var fetches: (discovery: Int, keySet: Int) { state.withLock { ($0.discoveryFetches, $0.keySetFetches) } }

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.get("/.well-known/openid-configuration") { _, _ -> Response in
                let (down, url, named) = self.state.withLock { state in
                    state.discoveryFetches += 1
                    return (state.down, state.url, state.discoveryIssuer ?? state.url)
                }
                if down { return Response(status: .serviceUnavailable) }
                let body =
                    #"{"issuer":"\#(named)","jwks_uri":"\#(url)/keys","id_token_signing_alg_values_supported":["ES256"]}"#
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            router.get("/keys") { _, _ -> Response in
                let (down, keys) = self.state.withLock { state in
                    state.keySetFetches += 1
                    return (state.down, state.keys)
                }
                if down { return Response(status: .serviceUnavailable) }
                let jwks = keys.map { kid, key in
                    let raw = Array(key.publicKey.rawRepresentation)
                    return #"{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"\#(kid)","#
                        + #""x":"\#(Token.base64URL(raw[..<32]))","y":"\#(Token.base64URL(raw[32...]))"}"#
                }
                // An RSA key and an encryption key are skipped, not fatal.
                let others =
                    #"{"kty":"RSA","kid":"rsa","n":"AQAB","e":"AQAB"},"#
                    + #"{"kty":"EC","crv":"P-256","use":"enc","kid":"enc","x":"AA","y":"AA"}"#
                let body = #"{"keys":[\#((jwks + [others]).joined(separator: ","))]}"#
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            return router
        }
    }

    /// Mints compact JWS tokens.
    enum Token {
        static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }

        static func json(_ object: [String: Any]) -> [UInt8] {
            Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        }

        static func sign(
            _ claims: [String: Any],
            kid: String?,
            key: P256.Signing.PrivateKey,
            alg: String = "ES256"
        ) throws -> String {
            var header: [String: Any] = ["alg": alg, "typ": "JWT"]
            header["kid"] = kid
            let input = base64URL(json(header)) + "." + base64URL(json(claims))
            let signature = try key.signature(for: Array(input.utf8))
            return input + "." + base64URL(signature.rawRepresentation)
        }
    }

    static let audience = "siwa"

    /// The verifier's clock, moved by the tests.
    final class Clock: Sendable {
        private let time = Mutex(Date())
        var now: Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    }

    static func claims(_ issuer: String, now: Date, _ changes: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": issuer, "aud": audience, "sub": "5b0c7f2e-1d9a-4a7b-9c1e-2f3a4b5c6d7e", "sid": "session-1",
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 900, "jti": "t1",
        ]
        for (name, value) in changes { claims[name] = value is NSNull ? nil : value }
        return claims
    }

    /// Runs `body` with an issuer on a loopback port and a verifier for it (clock `now`).
    static func withIssuer(
        clock: Clock = Clock(),
        _ body: @Sendable (Issuer, SiwaTokenVerifier) async throws -> Void
    ) async throws {
        let issuer = Issuer()
        let app = Application(router: issuer.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let url = "http://127.0.0.1:\(try #require(client.port))"
            issuer.state.withLock { $0.url = url }
            let verifier = SiwaTokenVerifier(
                issuer: url,
                audience: audience,
                transport: AsyncHTTPClientKeyTransport(),
                // Generous: a loaded test machine must not turn a slow fetch into a refusal.
                fetchTimeout: .seconds(120),
                now: { clock.now }
            )
            try await body(issuer, verifier)
        }
    }

    static func refusal(_ verifier: SiwaTokenVerifier, _ token: String) async -> SiwaTokenError.Code? {
        do {
            _ = try await verifier.verify(token)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aTokenSignedByTheIssuersKeyVerifiesThroughDiscovery() async throws {
        let clock = Clock()  // tokens are signed at the verifier's time, not the wall clock's
        try await Self.withIssuer(clock: clock) { issuer, verifier in
            let key = issuer.add("k1")
            let url = issuer.state.withLock { $0.url }
            let now = clock.now
            let token = try Token.sign(Self.claims(url, now: now, ["aud": ["other", "siwa"]]), kid: "k1", key: key)
            let claims = try await verifier.verify(token)
            #expect(claims.subject == "5b0c7f2e-1d9a-4a7b-9c1e-2f3a4b5c6d7e")
            #expect(claims.sessionID == "session-1")
            #expect(claims.audiences == ["other", "siwa"])
            #expect(claims.issuer == url)
            #expect(Int(claims.expiresAt.timeIntervalSince1970) == Int(now.timeIntervalSince1970) + 900)
            // Verified again from the cache: no second fetch.
            _ = try await verifier.verify(token)
            #expect(issuer.fetches == (1, 1))
        }
    }

    @Test func eachCheckRefusesWhatFailsIt() async throws {
        let clock = Clock()
        try await Self.withIssuer(clock: clock) { issuer, verifier in
            let key = issuer.add("k1")
            let url = issuer.state.withLock { $0.url }
            let now = clock.now  // the verifier's time, not the wall clock's (which moves on while the issuer starts)
            let stranger = P256.Signing.PrivateKey()
            let cases: [(String, SiwaTokenError.Code)] = [
                (try Token.sign(Self.claims(url, now: now), kid: "k1", key: stranger), .badSignature),
                (try Token.sign(Self.claims(url, now: now), kid: "k1", key: key, alg: "HS256"), .unsupportedAlgorithm),
                (try Token.sign(Self.claims(url, now: now), kid: "k1", key: key, alg: "none"), .unsupportedAlgorithm),
                (try Token.sign(Self.claims(url, now: now), kid: nil, key: key), .malformed),
                (try Token.sign(Self.claims(url, now: now), kid: "k9", key: key), .unknownKey),
                (try Token.sign(Self.claims("https://evil.example", now: now), kid: "k1", key: key), .wrongIssuer),
                (
                    try Token.sign(Self.claims(url, now: now, ["aud": "another-app"]), kid: "k1", key: key),
                    .wrongAudience
                ),
                (try Token.sign(Self.claims(url, now: now, ["aud": NSNull()]), kid: "k1", key: key), .missingClaim),
                (try Token.sign(Self.claims(url, now: now, ["sub": NSNull()]), kid: "k1", key: key), .missingClaim),
                (
                    try Token.sign(
                        Self.claims(url, now: now, ["exp": Int(now.timeIntervalSince1970) - 61]),
                        kid: "k1",
                        key: key
                    ), .expired
                ),
                (
                    try Token.sign(
                        Self.claims(url, now: now, ["iat": Int(now.timeIntervalSince1970) + 120]),
                        kid: "k1",
                        key: key
                    ), .notYetValid
                ),
                (
                    try Token.sign(
                        Self.claims(url, now: now, ["nbf": Int(now.timeIntervalSince1970) + 120]),
                        kid: "k1",
                        key: key
                    ), .notYetValid
                ),
                (try Token.sign(Self.claims(url, now: now, ["exp": true]), kid: "k1", key: key), .malformed),
                ("not.a.token", .malformed),
                ("", .malformed),
            ]
            for (token, expected) in cases {
                let refusal = await Self.refusal(verifier, token)
                #expect(refusal == expected, "expected \(expected), got \(refusal.map(\.rawValue) ?? "no refusal")")
            }
            // A token whose payload was changed after signing.
            let good = try Token.sign(Self.claims(url, now: now), kid: "k1", key: key)
            let parts = good.split(separator: ".")
            let forged = Token.base64URL(Token.json(Self.claims(url, now: now, ["sub": "someone-else"])))
            #expect(await Self.refusal(verifier, "\(parts[0]).\(forged).\(parts[2])") == .badSignature)
            // Within the leeway: a token expired 30 s ago still passes.
            let late = try Token.sign(
                Self.claims(url, now: now, ["exp": Int(now.timeIntervalSince1970) - 30]),
                kid: "k1",
                key: key
            )
            #expect(await Self.refusal(verifier, late) == nil)
        }
    }

    @Test func aRotatedKeyIsFetchedOnceAndAFloodOfUnknownKidsCostsOneFetch() async throws {
        let clock = Clock()
        try await Self.withIssuer(clock: clock) { issuer, verifier in
            let old = issuer.add("old")
            let url = issuer.state.withLock { $0.url }
            let time = clock.now
            _ = try await verifier.verify(try Token.sign(Self.claims(url, now: time), kid: "old", key: old))
            #expect(issuer.fetches == (1, 1))

            // siwa rotates: a token with the new kid makes the verifier fetch the key set again (not discovery).
            clock.advance(11)
            let new = issuer.add("new")
            let rotated = try Token.sign(Self.claims(url, now: time), kid: "new", key: new)
            #expect(try await verifier.verify(rotated).subject.isEmpty == false)
            #expect(issuer.fetches == (1, 2))

            // 50 tokens with made-up kids within the refetch interval: one fetch at most, each refused.
            clock.advance(11)
            for index in 0..<50 {
                let token = try Token.sign(Self.claims(url, now: time), kid: "made-up-\(index)", key: new)
                #expect(await Self.refusal(verifier, token) == .unknownKey)
            }
            #expect(issuer.fetches == (1, 3))
            // Concurrent verifications of an unknown kid share one fetch.
            clock.advance(11)
            let another = issuer.add("another")
            let token = try Token.sign(Self.claims(url, now: time), kid: "another", key: another)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { _ = try await verifier.verify(token) } }
                try await group.waitForAll()
            }
            #expect(issuer.fetches == (1, 4))
        }
    }

    @Test func anIssuerThatIsDownOrNamesAnotherIssuerIsKeysUnavailable() async throws {
        let clock = Clock()
        try await Self.withIssuer(clock: clock) { issuer, verifier in
            let key = issuer.add("k1")
            let url = issuer.state.withLock { $0.url }
            let time = clock.now
            let token = try Token.sign(Self.claims(url, now: time), kid: "k1", key: key)

            issuer.state.withLock { $0.discoveryIssuer = "https://someone-else.example" }
            #expect(await Self.refusal(verifier, token) == .keysUnavailable, "discovery must name the issuer")
            issuer.state.withLock { $0.discoveryIssuer = nil }
            clock.advance(11)
            _ = try await verifier.verify(token)

            // Down after the keys were read: a known key keeps working past the cache's age; an unknown one cannot.
            issuer.state.withLock { $0.down = true }
            clock.advance(7_200)
            let stale = try Token.sign(Self.claims(url, now: clock.now), kid: "k1", key: key)
            let before = issuer.fetches.keySet
            for _ in 0..<5 { _ = try await verifier.verify(stale) }
            #expect(issuer.fetches.keySet == before + 1, "one attempt per refetch interval, not one per token")
            clock.advance(11)
            let unknown = try Token.sign(Self.claims(url, now: clock.now), kid: "k2", key: key)
            #expect(await Self.refusal(verifier, unknown) == .keysUnavailable)
        }
    }

    struct Context: SiwaAuthenticatedRequestContext {
        var coreContext: CoreRequestContextStorage
        var siwaClaims: SiwaTokenClaims?
        init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
    }

    @Test func theHummingbirdAuthenticatorPutsTheClaimsInTheContextOrAnswers401() async throws {
        let clock = Clock()  // tokens are signed at the verifier's time, not the wall clock's
        try await Self.withIssuer(clock: clock) { issuer, verifier in
            let key = issuer.add("k1")
            let url = issuer.state.withLock { $0.url }
            let router = Router(context: Context.self)
            router.group("api").add(middleware: SiwaTokenAuthenticator(verifier: verifier))
                .get("me") { _, context -> String in context.siwaClaims?.subject ?? "" }
            router.group("open").add(middleware: SiwaTokenAuthenticator(verifier: verifier, required: false))
                .get("me") { _, context -> String in context.siwaClaims?.subject ?? "anonymous" }
            let app = Application(router: router)
            try await app.test(.router) { client in
                let token = try Token.sign(Self.claims(url, now: clock.now), kid: "k1", key: key)
                let ok = try await client.execute(
                    uri: "/api/me",
                    method: .get,
                    headers: [.authorization: "Bearer \(token)"]
                )
                #expect(ok.status == .ok)
                #expect(String(buffer: ok.body) == "5b0c7f2e-1d9a-4a7b-9c1e-2f3a4b5c6d7e")

                let none = try await client.execute(uri: "/api/me", method: .get)
                #expect(none.status == .unauthorized)
                #expect(none.headers[.wwwAuthenticate] == "Bearer")
                #expect(String(buffer: none.body).contains(#""error":"invalid_token""#))

                let stranger = try Token.sign(
                    Self.claims(url, now: clock.now),
                    kid: "k1",
                    key: P256.Signing.PrivateKey()
                )
                let bad = try await client.execute(
                    uri: "/api/me",
                    method: .get,
                    headers: [.authorization: "Bearer \(stranger)"]
                )
                #expect(bad.status == .unauthorized)
                #expect(bad.headers[.wwwAuthenticate] == #"Bearer error="invalid_token""#)
                let body = String(buffer: bad.body)
                #expect(body.contains("bad_signature"))
                #expect(!body.contains(stranger), "the token is never echoed")

                let anonymous = try await client.execute(uri: "/open/me", method: .get)
                #expect(String(buffer: anonymous.body) == "anonymous")
            }
        }
    }
}
