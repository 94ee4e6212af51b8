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
        // Compared byte by byte: a different last digit, a digit's case changed only where it is a letter, and a
        // claim of the hex form's byte length with a non-ASCII character in it.
        let lastDigit = Self.hex.last == "0" ? "1" : "0"
        #expect(!NonceForms.matches(claim: String(Self.hex.dropLast()) + lastDigit, raw: Self.raw))
        #expect(!NonceForms.matches(claim: "é" + String(Self.hex.dropFirst(2)), raw: Self.raw))
        #expect(!NonceForms.matches(claim: String(repeating: "0", count: 64), raw: Self.raw))
        #expect(NonceForms.matches(claim: "", raw: ""))
        #expect(!NonceForms.matches(claim: Self.raw.uppercased(), raw: Self.raw), "the raw form is compared exactly")
        // Only A–Z are folded: a digit with its 0x20 bit cleared (a control character) is not that digit.
        let digitsCleared = String(
            decoding: Self.hex.utf8.map { $0 >= 0x30 && $0 <= 0x39 ? $0 & ~0x20 : $0 },
            as: UTF8.self
        )
        #expect(!NonceForms.matches(claim: digitsCleared, raw: Self.raw))
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
