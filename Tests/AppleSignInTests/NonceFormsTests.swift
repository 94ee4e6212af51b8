import AppleSignIn
import Crypto
import Testing

/// The two forms of a nonce in a token, written once for the verifier and for server nonces.
@Suite struct NonceFormsTests {
    static let raw = "n-0123456789"
    static let hex = SHA256.hash(data: Array(raw.utf8)).map { String($0, radix: 16).leftPadded }.joined()

    @Test func aClaimMatchesTheRawNonceOrItsSHA256Hex() {
        #expect(NonceForms.matches(claim: Self.raw, raw: Self.raw))
        #expect(NonceForms.matches(claim: Self.hex, raw: Self.raw))
        #expect(NonceForms.matches(claim: Self.hex.uppercased(), raw: Self.raw))
        #expect(!NonceForms.matches(claim: Self.raw + "x", raw: Self.raw))
        #expect(!NonceForms.matches(claim: String(Self.hex.dropLast()), raw: Self.raw))
    }

    @Test func aClaimStandsForTheHashOfTheRawNonceInEitherForm() {
        let stored = Array(SHA256.hash(data: Array(Self.raw.utf8)))
        #expect(NonceForms.rawNonceHashes(claim: Self.raw).contains(stored), "the app passed the raw nonce")
        #expect(NonceForms.rawNonceHashes(claim: Self.hex).contains(stored), "the app passed its SHA-256 hex")
        #expect(NonceForms.rawNonceHashes(claim: Self.hex.uppercased()).contains(stored))
        #expect(NonceForms.rawNonceHashes(claim: "zz").count == 1, "not hex: only the raw form")
    }
}

extension String {
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
