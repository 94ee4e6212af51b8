import AppleSignInClient
import Crypto
import Foundation
import Testing

/// The nonce helper and the SHA-256 it is built on (FIPS 180-4 vectors, and swift-crypto as a second opinion).
@Suite("Client: sign-in nonce")
struct SignInNonceTests {
    /// FIPS 180-4 / NIST CAVP examples.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func knownVectors(_ input: String, _ digest: String) {
        #expect(SignInNonce.sha256Hex(input) == digest)
    }

    @Test func oneMillionAs() {
        #expect(
            SignInNonce.sha256Hex(String(repeating: "a", count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        )
    }

    @Test func agreesWithSwiftCryptoAcrossBlockBoundaries() {
        // Every length up to three blocks, so each padding case (55, 56, 63, 64 bytes, …) is covered, plus
        // multi-byte UTF-8.
        for length in 0...192 {
            let text = String(repeating: "x", count: length)
            #expect(SignInNonce.sha256Hex(text) == swiftCryptoHex(text), "length \(length)")
        }
        let unicode = "Jöhn Åppleseed 🍎 中文"
        #expect(SignInNonce.sha256Hex(unicode) == swiftCryptoHex(unicode))
    }

    @Test func nonceIsRandomBase64URLAndHashedForApple() {
        let nonces = (0..<100).map { _ in SignInNonce() }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for nonce in nonces {
            #expect(nonce.raw.count == 32)
            #expect(nonce.raw.allSatisfy(alphabet.contains))
            #expect(nonce.hashed == swiftCryptoHex(nonce.raw))
        }
        #expect(Set(nonces.map(\.raw)).count == 100)
        // All 64 characters turn up: the generator's bits are spread over the whole alphabet.
        #expect(Set(nonces.flatMap(\.raw)) == alphabet)
        #expect(SignInNonce(length: 43).raw.count == 43)
        #expect(SignInNonce(raw: "abc").hashed == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    private func swiftCryptoHex(_ text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
