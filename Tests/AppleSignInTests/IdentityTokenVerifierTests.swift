import AppleSignIn
import Crypto
import CryptoExtras
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Identity token verification")
struct IdentityTokenVerifierTests {
    static let bundleID = "com.example.app"
    static let servicesID = "com.example.web"
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    let apple: TestAppleKeys
    let clock = ManualWallClock(now)

    init() throws {
        apple = try TestAppleKeys(count: 1)
    }

    private func verifier(
        keys: TestAppleKeys? = nil,
        acceptsAccountAppleIssuer: Bool = false,
        acceptsMissingNonce: Bool = false
    ) throws -> IdentityTokenVerifier {
        let configuration = try AppleSignInConfiguration(
            bundleIDs: [ClientID(Self.bundleID)],
            servicesID: ClientID(Self.servicesID),
            acceptsAccountAppleIssuer: acceptsAccountAppleIssuer,
            acceptsMissingNonceOnUnsupportedPlatforms: acceptsMissingNonce
        )
        let cache = AppleKeyCache(source: StaticAppleKeySource(keySet: try (keys ?? apple).keySet()), clock: clock)
        return IdentityTokenVerifier(configuration: configuration, keys: cache, clock: clock)
    }

    private func claims(aud: String = bundleID, nonce: String? = nil, extra: [String] = []) -> TestClaims {
        TestClaims(aud: aud, now: Self.now, nonce: nonce, email: "user@example.com", extra: extra)
    }

    @Test func validTokenVerifiesAndDecodesClaims() async throws {
        let token = try apple.identityToken(
            claims(extra: [
                #""email_verified":true"#, #""is_private_email":false"#, #""real_user_status":2"#,
                #""nonce_supported":true"#, #""auth_time":1749999990"#, #""transfer_sub":"000111.aa.2222""#,
                #""org_id":"org-1""#,
            ])
        )
        let verified = try await verifier().verify(token)
        #expect(verified.sub == AppleUserID("001234.abcdef0123456789abcdef0123456789.1234"))
        #expect(verified.aud == ClientID(Self.bundleID))
        #expect(verified.email == "user@example.com")
        #expect(verified.emailVerified == true)
        #expect(verified.isPrivateEmail == false)
        #expect(verified.realUserStatus == .likelyReal)
        #expect(verified.nonceSupported == true)
        #expect(verified.authTime == Date(timeIntervalSince1970: 1_749_999_990))
        #expect(verified.transferSub == AppleUserID("000111.aa.2222"))
        #expect(verified.orgId == "org-1")
        #expect(verified.issuedAt == Self.now)
    }

    /// `verify` and `inspect` walk one list of checks: `inspect` reports each of them, in order, and a token that
    /// fails one of them fails `verify` with the same error.
    @Test func inspectReportsEveryCheckThatVerifyRuns() async throws {
        let good = try apple.identityToken(claims(nonce: "n-1"))
        let report = try await verifier().inspect(good, expectedNonce: "n-1")
        #expect(report.checks.map(\.name) == IdentityTokenVerifier.identityTokenCheckNames)
        #expect(report.passed)
        #expect(
            try await verifier().verify(good, expectedNonce: "n-1").sub
                == AppleUserID("001234.abcdef0123456789abcdef0123456789.1234")
        )

        // One failing check at a time: inspect names it (and only it), verify throws its error.
        let failing: [(check: String, token: String, nonce: String?)] = [
            ("audience", try apple.identityToken(claims(aud: "com.other")), nil),
            (
                "expiry",
                try apple.identityToken(TestClaims(aud: Self.bundleID, now: Self.now.addingTimeInterval(-7_200))), nil
            ),
            ("claims", good, "another nonce"),
        ]
        for (check, token, nonce) in failing {
            let inspection = try await verifier().inspect(token, expectedNonce: nonce)
            #expect(inspection.checks.map(\.name) == IdentityTokenVerifier.identityTokenCheckNames, "\(check)")
            #expect(inspection.checks.filter { !$0.passed }.map(\.name) == [check], "\(check)")
            let expected = try #require(
                inspection.checks.first { !$0.passed }.flatMap { check -> AppleSignInError? in
                    if case .failure(let error) = check.outcome { return error }
                    return nil
                }
            )
            await #expect(throws: expected, "\(check)") { try await verifier().verify(token, expectedNonce: nonce) }
        }
    }

    @Test func servicesIDIsAnAllowedAudience() async throws {
        let token = try apple.identityToken(claims(aud: Self.servicesID))
        #expect(try await verifier().verify(token).aud == ClientID(Self.servicesID))
    }

    @Test func booleanClaimsAcceptStringForms() async throws {
        let token = try apple.identityToken(
            claims(extra: [#""email_verified":"true""#, #""is_private_email":"false""#])
        )
        let verified = try await verifier().verify(token)
        #expect(verified.emailVerified == true)
        #expect(verified.isPrivateEmail == false)
    }

    @Test func booleanClaimOfAnotherShapeIsMalformed() async throws {
        let token = try apple.identityToken(claims(extra: [#""email_verified":"yes""#]))
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verify(token) }
    }

    @Test func audienceOfAnotherAppIsRefused() async throws {
        let token = try apple.identityToken(claims(aud: "com.other.app"))
        let error = await #expect(throws: AppleSignInError.audienceMismatch(got: "")) {
            try await verifier().verify(token)
        }
        #expect(error?.reason.contains("com.other.app") == true)
    }

    @Test func expiredTokenIsRefusedBeyondLeeway() async throws {
        let token = try apple.identityToken(claims())
        let verifier = try verifier()
        clock.set(Self.now.addingTimeInterval(600 + 59))
        _ = try await verifier.verify(token)  // within the 60 s leeway
        clock.set(Self.now.addingTimeInterval(600 + 61))
        await #expect(throws: AppleSignInError.expired) { try await verifier.verify(token) }
    }

    @Test func tokenIssuedInTheFutureIsRefusedBeyondLeeway() async throws {
        let token = try apple.identityToken(claims())
        let verifier = try verifier()
        clock.set(Self.now.addingTimeInterval(-59))
        _ = try await verifier.verify(token)
        clock.set(Self.now.addingTimeInterval(-61))
        await #expect(throws: AppleSignInError.issuedInFuture) { try await verifier.verify(token) }
    }

    @Test func wrongIssuerIsRefused() async throws {
        var wrong = claims()
        wrong.iss = "https://evil.example"
        await #expect(throws: AppleSignInError.issuerMismatch) {
            try await verifier().verify(try apple.identityToken(wrong))
        }
    }

    @Test func accountAppleIssuerOnlyWhenTurnedOn() async throws {
        var alternative = claims()
        alternative.iss = "https://account.apple.com"
        let token = try apple.identityToken(alternative)
        await #expect(throws: AppleSignInError.issuerMismatch) { try await verifier().verify(token) }
        #expect(try await verifier(acceptsAccountAppleIssuer: true).verify(token).iss == "https://account.apple.com")
    }

    @Test func signatureFromAKeyNotInTheKeySetIsRefused() async throws {
        // Same kid, different key: the JWKS holds `apple`'s key, the token is signed by `impostor`.
        let impostor = try TestAppleKeys(count: 1)
        let token = try impostor.identityToken(claims())
        await #expect(throws: AppleSignInError.badSignature) { try await verifier().verify(token) }
    }

    @Test func tamperedClaimsBreakTheSignature() async throws {
        let token = try apple.identityToken(claims())
        let parts = token.split(separator: ".").map(String.init)
        let forgedClaims = Base64URLText.encode(Array(claims(aud: Self.servicesID).json.utf8))
        await #expect(throws: AppleSignInError.badSignature) {
            try await verifier().verify([parts[0], forgedClaims, parts[2]].joined(separator: "."))
        }
    }

    @Test func unknownKidIsRefused() async throws {
        let token = try apple.identityToken(claims(), kid: "not-a-key")
        await #expect(throws: AppleSignInError.unknownKey) { try await verifier().verify(token) }
    }

    @Test(arguments: ["none", "HS256", "ES256", "RS384", "PS256", "rs256", ""])
    func algorithmsOtherThanRS256AreRefused(alg: String) async throws {
        let token = try apple.sign(headerJSON: #"{"kid":"\#(apple.kid)","alg":"\#(alg)"}"#, claimsJSON: claims().json)
        await #expect(throws: AppleSignInError.algorithmNotAllowed) { try await verifier().verify(token) }
    }

    @Test func hs256SignedWithApplesPublicKeyIsRefused() async throws {
        // The classic key-confusion attack: HMAC keyed with the RSA public key a verifier might hand to HS256.
        let publicKeyPEM = apple.keys[0].privateKey.publicKey.pemRepresentation
        let signingInput =
            Base64URLText.encode(Array(#"{"kid":"\#(apple.kid)","alg":"HS256"}"#.utf8)) + "."
            + Base64URLText.encode(Array(claims().json.utf8))
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(signingInput.utf8),
            using: SymmetricKey(data: Array(publicKeyPEM.utf8))
        )
        let token = signingInput + "." + Base64URLText.encode(Array(mac))
        await #expect(throws: AppleSignInError.algorithmNotAllowed) { try await verifier().verify(token) }
    }

    @Test func unsignedTokenIsRefused() async throws {
        let token =
            Base64URLText.encode(Array(#"{"alg":"none","kid":"\#(apple.kid)"}"#.utf8)) + "."
            + Base64URLText.encode(Array(claims().json.utf8)) + "."
        await #expect(throws: AppleSignInError.algorithmNotAllowed) { try await verifier().verify(token) }
    }

    @Test(arguments: [
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "!!!.e30.c2ln",
        "e30.e30.c2ln",  // header {} has no alg
        "bm90IGpzb24.e30.c2ln",  // header is not JSON
    ])
    func structurallyBrokenTokensAreMalformed(token: String) async throws {
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verify(token) }
    }

    @Test func malformedSignaturePartIsMalformed() async throws {
        let parts = try apple.identityToken(claims()).split(separator: ".").map(String.init)
        await #expect(throws: AppleSignInError.malformed) {
            try await verifier().verify(parts[0] + "." + parts[1] + ".not*base64")
        }
        await #expect(throws: AppleSignInError.malformed) {
            try await verifier().verify(parts[0] + "." + parts[1] + ".")
        }
    }

    @Test func malformedPayloadPartIsMalformed() async throws {
        let header = #"{"kid":"\#(apple.kid)","alg":"RS256"}"#
        // Signed correctly, but the claims are not a JSON object / lack required claims / have a duplicate key.
        for claimsJSON in [
            "[1,2]", "{\"iss\":", #"{"iss":"https://appleid.apple.com"}"#,
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","aud":"com.other","exp":1,"iat":1,"sub":"x"}"#,
        ] {
            let token = try apple.sign(headerJSON: header, claimsJSON: claimsJSON)
            await #expect(throws: AppleSignInError.malformed) { try await verifier().verify(token) }
        }
        let parts = try apple.identityToken(claims()).split(separator: ".").map(String.init)
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verify(parts[0] + ".@@." + parts[2]) }
    }

    @Test func missingSubjectIsMalformed() async throws {
        let claimsJSON =
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":\#(Int(Self.now.timeIntervalSince1970) + 600),"iat":\#(Int(Self.now.timeIntervalSince1970))}"#
        let token = try apple.sign(headerJSON: #"{"kid":"\#(apple.kid)","alg":"RS256"}"#, claimsJSON: claimsJSON)
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verify(token) }
    }

    @Test func oversizedTokenIsMalformed() async throws {
        let huge = String(repeating: "a", count: 1_048_576)
        await #expect(throws: AppleSignInError.malformed) {
            try await verifier().verify(huge + "." + huge + "." + huge)
        }
    }

    @Test func nonceMatchesRawOrSHA256Hex() async throws {
        let raw = "n-0S6_WzA2Mj"
        let hashed = sha256Hex(raw)
        #expect(
            try await verifier().verify(try apple.identityToken(claims(nonce: raw)), expectedNonce: raw).nonce == raw
        )
        #expect(
            try await verifier().verify(try apple.identityToken(claims(nonce: hashed)), expectedNonce: raw).nonce
                == hashed
        )
    }

    @Test func wrongNonceIsRefused() async throws {
        let token = try apple.identityToken(claims(nonce: "other"))
        await #expect(throws: AppleSignInError.nonceMismatch) {
            try await verifier().verify(token, expectedNonce: "expected")
        }
        // The hash of the expected nonce must not be accepted as the raw expected value the other way round.
        let hashedToken = try apple.identityToken(claims(nonce: "expected"))
        let expectedHash = sha256Hex("expected")
        await #expect(throws: AppleSignInError.nonceMismatch) {
            try await verifier().verify(hashedToken, expectedNonce: expectedHash)
        }
    }

    @Test func missingNonceFailsWhenExpected() async throws {
        let supported = try apple.identityToken(claims(extra: [#""nonce_supported":true"#]))
        await #expect(throws: AppleSignInError.nonceMissing) {
            try await verifier().verify(supported, expectedNonce: "n")
        }
        await #expect(throws: AppleSignInError.nonceMissing) {
            try await verifier(acceptsMissingNonce: true).verify(supported, expectedNonce: "n")
        }
        // An old platform that says it cannot carry a nonce passes only when configured to.
        let unsupported = try apple.identityToken(claims(extra: [#""nonce_supported":false"#]))
        await #expect(throws: AppleSignInError.nonceMissing) {
            try await verifier().verify(unsupported, expectedNonce: "n")
        }
        _ = try await verifier(acceptsMissingNonce: true).verify(unsupported, expectedNonce: "n")
        // No nonce expected: a token without one verifies.
        _ = try await verifier().verify(supported)
    }

    @Test func privateRelayIsJudgedByClaimFirst() async throws {
        let relayByClaim = try await verifier().verify(
            try apple.identityToken(
                TestClaims(
                    aud: Self.bundleID,
                    now: Self.now,
                    email: "abc@example.com",
                    extra: [#""is_private_email":"true""#]
                )
            )
        )
        #expect(relayByClaim.emailIsPrivateRelay)
        let relayByDomain = try await verifier().verify(
            try apple.identityToken(TestClaims(aud: Self.bundleID, now: Self.now, email: "x1@privaterelay.appleid.com"))
        )
        #expect(relayByDomain.emailIsPrivateRelay)
        let sharedDespiteDomain = try await verifier().verify(
            try apple.identityToken(
                TestClaims(
                    aud: Self.bundleID,
                    now: Self.now,
                    email: "x@private.icloud.com",
                    extra: [#""is_private_email":false"#]
                )
            )
        )
        #expect(!sharedDespiteDomain.emailIsPrivateRelay)
        #expect(PrivateRelayEmail.isPrivateRelay(email: "Y@Private.iCloud.com", claim: nil))
        #expect(!PrivateRelayEmail.isPrivateRelay(email: "y@icloud.com", claim: nil))
    }

    @Test func anAudienceArrayMustBeExactlyOneAllowedClient() async throws {
        func token(_ audience: String) throws -> String {
            try apple.sign(
                headerJSON: #"{"kid":"\#(apple.kid)","alg":"RS256"}"#,
                claimsJSON: claims().json.replacing(#""aud":"com.example.app""#, with: #""aud":\#(audience)"#)
            )
        }
        #expect(try await verifier().verify(try token(#"["com.example.app"]"#)).aud == ClientID(Self.bundleID))
        // OpenID Connect Core 3.1.3.7: a token that also names an audience we do not trust is refused.
        for audience in [#"["com.other","com.example.app"]"#, #"["com.example.app","com.other"]"#, #"["com.other"]"#] {
            await #expect(throws: AppleSignInError.audienceMismatch(got: ""), "\(audience)") {
                try await verifier().verify(try token(audience))
            }
        }
    }

    /// The audience is compared in place when it is one plain string, and read as a string otherwise: every form of
    /// it decides as the string does. Strings are equal by canonical equivalence, so a Kelvin sign (U+212A) in the
    /// token is the configured letter K, as it was before the in-place compare.
    @Test func everyFormOfTheAudienceDecidesAsItsString() async throws {
        func token(_ audience: String) throws -> String {
            try apple.sign(
                headerJSON: #"{"kid":"\#(apple.kid)","alg":"RS256"}"#,
                claimsJSON: claims().json.replacing(#""aud":"com.example.app""#, with: #""aud":\#(audience)"#)
            )
        }
        let accepted: [(String, String)] = [
            (#""com.example.app""#, Self.bundleID),
            (#""com.example.web""#, Self.servicesID),
            (#""com.example.ap\u0070""#, Self.bundleID),
            (#""com\u002eexample.app""#, Self.bundleID),
            (#""com.\u212Aelvin.app""#, "com.Kelvin.app"),
            ("\"com.\u{212A}elvin.app\"", "com.Kelvin.app"),
        ]
        let configuration = try AppleSignInConfiguration(
            bundleIDs: [ClientID(Self.bundleID), ClientID("com.Kelvin.app")],
            servicesID: ClientID(Self.servicesID)
        )
        let keys = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()), clock: clock)
        let verifier = IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
        for (audience, expected) in accepted {
            #expect(try await verifier.verify(try token(audience)).aud == ClientID(expected), "\(audience)")
        }
        for audience in [
            #""com.example.ap""#, #""com.example.appp""#, #""Com.example.app""#, #""com.example.app ""#, #""""#,
            #""com.exämple.app""#,
        ] {
            await #expect(throws: AppleSignInError.audienceMismatch(got: ""), "\(audience)") {
                try await verifier.verify(try token(audience))
            }
        }
        for audience in ["1", "null", "true", "{}", "[]", #"[1]"#] {
            await #expect(throws: AppleSignInError.malformed, "\(audience)") {
                try await verifier.verify(try token(audience))
            }
        }
    }
}

/// Lower-case hex of SHA-256, as apps send a hashed nonce to Apple.
func sha256Hex(_ text: String) -> String {
    let digits = Array("0123456789abcdef")
    return String(SHA256.hash(data: Array(text.utf8)).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
}
