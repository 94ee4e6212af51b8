import AppleSignIn
import CryptoExtras
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Tokens and notifications that Apple itself signed (2019 to 2025), verified against Apple's real keys.
@Suite("Real Apple data")
struct RealAppleDataTests {
    static let fixtures: RealAppleFixtures = {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        return try! RealAppleFixtures(directory: directory)
    }()

    private func verifier(aud: String, at time: TimeInterval) throws -> (IdentityTokenVerifier, ManualWallClock) {
        let clock = ManualWallClock(unixTime: time)
        let keys = AppleKeyCache(
            source: StaticAppleKeySource(keySet: try AppleKeySet(jwks: Self.fixtures.jwks)),
            clock: clock
        )
        let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID(aud)], clockLeeway: 0)
        return (IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock), clock)
    }

    @Test func appleKeySetParses() throws {
        let keySet = try AppleKeySet(jwks: Self.fixtures.jwks)
        #expect(keySet.keys.count == 18)
        #expect(keySet.keys.values.allSatisfy { $0.publicKey.keySizeInBits == 2048 })
    }

    @Test(arguments: 0..<25)
    func realTokenVerifiesAndDecodes(index: Int) async throws {
        let fixture = Self.fixtures.tokens[index]
        let (verifier, _) = try verifier(aud: fixture.aud, at: (fixture.iat + fixture.exp) / 2)
        let token = try await verifier.verify(fixture.token)
        #expect(token.sub.rawValue == fixture.sub)
        #expect(token.aud.rawValue == fixture.aud)
        #expect(token.issuedAt.timeIntervalSince1970 == fixture.iat)
        #expect(token.expiresAt.timeIntervalSince1970 == fixture.exp)
        #expect(token.email == fixture.claims["email"]?.string)
        #expect(token.nonce == fixture.claims["nonce"]?.string)
        #expect(token.cHash == fixture.claims["c_hash"]?.string)
        #expect(token.atHash == fixture.claims["at_hash"]?.string)
        // email_verified and is_private_email: the strings "true"/"false" in older tokens, booleans in newer ones.
        for (name, decoded) in [("email_verified", token.emailVerified), ("is_private_email", token.isPrivateEmail)] {
            switch fixture.claims[name] {
            case .bool(let value)?: #expect(decoded == value)
            case .string(let value)?: #expect(decoded == (value == "true"))
            default: #expect(decoded == nil)
            }
        }
        if case .bool(let supported)? = fixture.claims["nonce_supported"] { #expect(token.nonceSupported == supported) }
        if case .number(let status)? = fixture.claims["real_user_status"] {
            #expect(token.realUserStatus == RealUserStatus(rawValue: Int(status)))
        }
        if let email = token.email {
            #expect(token.emailIsPrivateRelay == email.hasSuffix("@privaterelay.appleid.com"))
        }
    }

    @Test(arguments: 0..<25)
    func realTokenFailsWhenClockAudienceOrSignatureChange(index: Int) async throws {
        let fixture = Self.fixtures.tokens[index]
        let (verifier, clock) = try verifier(aud: fixture.aud, at: fixture.exp + 1)
        await #expect(throws: AppleSignInError.expired) { try await verifier.verify(fixture.token) }
        clock.set(Date(timeIntervalSince1970: fixture.iat - 1))
        await #expect(throws: AppleSignInError.issuedInFuture) { try await verifier.verify(fixture.token) }

        let (otherApp, _) = try self.verifier(aud: "com.example.someone-else", at: fixture.iat + 1)
        await #expect(throws: AppleSignInError.audienceMismatch(got: fixture.aud)) {
            try await otherApp.verify(fixture.token)
        }

        // Flip one byte of the signature (re-encoded, so the token stays well formed).
        let (good, _) = try self.verifier(aud: fixture.aud, at: fixture.iat + 1)
        let parts = fixture.token.split(separator: ".").map(String.init)
        var signature = try #require(base64URLDecode(parts[2]))
        signature[signature.count / 2] ^= 0x01
        let tampered = parts[0] + "." + parts[1] + "." + Base64URLText.encode(signature)
        await #expect(throws: AppleSignInError.badSignature) { try await good.verify(tampered) }
    }

    @Test(arguments: 0..<4)
    func realNotificationDecodes(index: Int) async throws {
        let fixture = Self.fixtures.notifications[index]
        let (verifier, _) = try verifier(aud: fixture.aud, at: (fixture.iat + fixture.exp) / 2)
        let notification = try await verifier.verifyNotification(body: fixture.body)
        #expect(notification.aud.rawValue == fixture.aud)
        #expect(notification.event.type.rawValue == fixture.type)
        #expect(notification.event.type.isKnown)
        #expect(notification.event.sub.rawValue == fixture.sub)
        #expect(
            notification.event.eventTime == Date(timeIntervalSince1970: Double(fixture.eventTimeMilliseconds) / 1000)
        )
        if notification.event.type == .emailDisabled {
            #expect(notification.event.email?.hasSuffix("@privaterelay.appleid.com") == true)
            #expect(notification.event.isPrivateEmail == true)
        }
    }

    @Test func realNotificationTypesAreTheOnesApplePublished() async throws {
        let types = Self.fixtures.notifications.map(\.type).sorted()
        #expect(types == ["consent-revoked", "consent-revoked", "consent-revoked", "email-disabled"])
    }

    @Test func realNotificationForAnotherAppIsRefused() async throws {
        let fixture = Self.fixtures.notifications[0]
        let (verifier, _) = try verifier(aud: "com.example.someone-else", at: fixture.iat + 1)
        await #expect(throws: AppleSignInError.audienceMismatch(got: fixture.aud)) {
            try await verifier.verifyNotification(body: fixture.body)
        }
    }
}

/// Base64url decoding for tests (the library's own decoder is package-internal and exercised by it).
func base64URLDecode(_ text: String) -> [UInt8]? {
    var standard = text.replacing("-", with: "+").replacing("_", with: "/")
    while standard.utf8.count % 4 != 0 { standard.append("=") }
    return Data(base64Encoded: standard).map(Array.init)
}
