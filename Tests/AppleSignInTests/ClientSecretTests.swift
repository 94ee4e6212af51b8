import AppleSignIn
import Crypto
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Client secret")
struct ClientSecretTests {
    static let teamID = "ABCDE12345"
    static let keyID = "KEY0123456"
    static let bundleID: ClientID = "com.example.app"
    static let servicesID: ClientID = "com.example.web"

    let privateKey = P256.Signing.PrivateKey()
    let clock = ManualWallClock(unixTime: 1_750_000_000)

    private func factory(lifetime: TimeInterval = 86_400) throws -> ClientSecretFactory {
        let credentials = ClientSecretCredentials(
            teamID: try TeamID(Self.teamID),
            keyID: try KeyID(Self.keyID),
            key: AppleDeveloperKey(privateKey: privateKey)
        )
        return ClientSecretFactory(credentials: credentials, lifetime: lifetime, clock: clock)
    }

    @Test func secretIsAnES256JWTWithApplesHeaderAndClaims() throws {
        let secret = try factory(lifetime: 86_400).secret(for: Self.bundleID)
        let jwt = try ClientSecretJWT(secret.token)
        #expect(jwt.header.alg == "ES256")
        #expect(jwt.header.kid == Self.keyID)
        #expect(jwt.claims.iss == Self.teamID)
        #expect(jwt.claims.iat == 1_750_000_000)
        #expect(jwt.claims.exp == 1_750_000_000 + 86_400)
        #expect(jwt.claims.aud == "https://appleid.apple.com")
        #expect(jwt.claims.sub == Self.bundleID.rawValue)
        #expect(secret.expiresAt == Date(timeIntervalSince1970: 1_750_000_000 + 86_400))
    }

    @Test func signatureVerifiesWithTheDevelopersPublicKey() throws {
        let jwt = try ClientSecretJWT(try factory().secret(for: Self.bundleID).token)
        #expect(jwt.signature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
        #expect(privateKey.publicKey.isValidSignature(signature, for: jwt.signingInput))
        // Another key does not verify it, and neither does a changed signing input.
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: jwt.signingInput))
        #expect(!privateKey.publicKey.isValidSignature(signature, for: jwt.signingInput + [0x41]))
    }

    @Test func fractionalClockIsRoundedDownForIssuedAt() throws {
        clock.set(Date(timeIntervalSince1970: 1_750_000_000.9))
        let jwt = try ClientSecretJWT(try factory(lifetime: 600).secret(for: Self.bundleID).token)
        #expect(jwt.claims.iat == 1_750_000_000)
        #expect(jwt.claims.exp == 1_750_000_600)
    }

    @Test func lifetimeIsCappedAtApplesMaximum() throws {
        let jwt = try ClientSecretJWT(try factory(lifetime: 20_000_000).secret(for: Self.bundleID).token)
        #expect(jwt.claims.exp - jwt.claims.iat == 15_777_000)
    }

    @Test func cachedSecretIsReusedUntilTheLastHourOfALongLifetime() throws {
        // One day: a tenth is 2.4 h, so the one-hour cap decides the renewal margin.
        let factory = try factory(lifetime: 86_400)
        let first = factory.secret(for: Self.bundleID)
        clock.advance(by: 86_400 - 3600 - 1)
        #expect(factory.secret(for: Self.bundleID).token == first.token)
        clock.advance(by: 2)
        let renewed = factory.secret(for: Self.bundleID)
        #expect(renewed.token != first.token)
        let jwt = try ClientSecretJWT(renewed.token)
        #expect(jwt.claims.iat == 1_750_000_000 + 86_400 - 3600 + 1)
        #expect(jwt.claims.exp == jwt.claims.iat + 86_400)
        // The renewed secret is the cached one from now on.
        #expect(factory.secret(for: Self.bundleID).token == renewed.token)
    }

    @Test func cachedSecretIsRenewedInTheLastTenthOfAShortLifetime() throws {
        // Ten minutes: the margin is a tenth, 60 s.
        let factory = try factory(lifetime: 600)
        let first = factory.secret(for: Self.bundleID)
        clock.advance(by: 539)
        #expect(factory.secret(for: Self.bundleID).token == first.token)
        clock.advance(by: 2)
        let renewed = factory.secret(for: Self.bundleID)
        #expect(renewed.token != first.token)
        #expect(try ClientSecretJWT(renewed.token).claims.iat == 1_750_000_541)
    }

    @Test func eachClientIDGetsItsOwnSecret() throws {
        let factory = try factory()
        let native = factory.secret(for: Self.bundleID)
        let web = factory.secret(for: Self.servicesID)
        #expect(native.token != web.token)
        #expect(try ClientSecretJWT(native.token).claims.sub == Self.bundleID.rawValue)
        #expect(try ClientSecretJWT(web.token).claims.sub == Self.servicesID.rawValue)
        // Both stay cached side by side.
        #expect(factory.secret(for: Self.bundleID).token == native.token)
        #expect(factory.secret(for: Self.servicesID).token == web.token)
    }

    @Test func concurrentCallersShareOneSecret() async throws {
        let factory = try factory()
        let tokens = await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { factory.secret(for: Self.bundleID).token } }
            var tokens: [String] = []
            for await token in group { tokens.append(token) }
            return tokens
        }
        #expect(tokens.count == 50)
        #expect(Set(tokens).count == 1)
    }

    @Test func makeSecretSignsAnewWithoutTouchingTheCache() throws {
        let factory = try factory()
        let cached = factory.secret(for: Self.bundleID)
        let made = factory.makeSecret(for: Self.bundleID, now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(made.token != cached.token)
        #expect(try ClientSecretJWT(made.token).claims.iat == 1_800_000_000)
        #expect(factory.secret(for: Self.bundleID).token == cached.token)
    }

    @Test func secretPrintsRedacted() throws {
        let secret = try factory().secret(for: Self.bundleID)
        let parts = secret.token.split(separator: ".")
        #expect(!"\(secret)".contains(String(parts[1])))
        #expect(!"\(secret)".contains(String(parts[2])))
    }
}

/// A client secret taken apart with Foundation's decoders (independent of the library's own JSON and base64url code).
struct ClientSecretJWT {
    struct Header: Decodable {
        let alg: String
        let kid: String
    }

    struct Claims: Decodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let sub: String
    }

    let header: Header
    let claims: Claims
    let signingInput: [UInt8]
    let signature: [UInt8]

    init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        self.header = try JSONDecoder().decode(Header.self, from: Data(try #require(base64URLDecode(parts[0]))))
        self.claims = try JSONDecoder().decode(Claims.self, from: Data(try #require(base64URLDecode(parts[1]))))
        self.signingInput = Array((parts[0] + "." + parts[1]).utf8)
        self.signature = try #require(base64URLDecode(parts[2]))
    }
}
