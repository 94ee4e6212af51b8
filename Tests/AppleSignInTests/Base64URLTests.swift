import AppleSignIn
import SiwaTesting
import Testing

@Suite("Base64url")
struct Base64URLTests {
    @Test(arguments: 0...20)
    func roundTrips(length: Int) throws {
        // Every byte value appears across the lengths, including 0xFB..0xFF which need '-' and '_'.
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: 0xFF - $0 * 13) }
        let encoded = Base64URL.encode(bytes)
        #expect(encoded == Base64URLText.encode(bytes))
        #expect(encoded.utf8.count == (length * 4 + 2) / 3)
        #expect(!encoded.contains("="))
        #expect(Base64URL.decode(encoded) == bytes)
        #expect(Base64URL.decode(Array(encoded.utf8)) == bytes)
    }

    @Test func randomBytesRoundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    /// Long inputs are decoded four characters at a time through the pre-shifted tables: a character outside the
    /// alphabet is refused at every position, in the groups the fast loop reads and in the tail after them.
    @Test(arguments: [45, 46, 47])
    func aBadCharacterAnywhereInALongInputIsRefused(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
        let encoded = Array(Base64URL.encode(bytes).utf8)
        #expect(Base64URL.decode(encoded) == bytes)
        for position in encoded.indices {
            for bad: UInt8 in [0x2B, 0x2F, 0x3D, 0x20, 0x00, 0x7F, 0x80, 0xC3, 0xFF] {
                var text = encoded
                text[position] = bad
                #expect(Base64URL.decode(text) == nil, "\(bad) at \(position) of \(encoded.count)")
            }
        }
    }

    /// The fast loop stores each group as four bytes, the fourth of which the next group overwrites: nothing is ever
    /// written past the bytes the input decodes to (a token's parts are decoded side by side into one buffer).
    @Test func decodingWritesNothingPastItsOutput() {
        for length in 0...60 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 91 + 7) }
            let text = Array(Base64URL.encode(bytes).utf8)
            let count = Base64URL.decodedCount(text.count)!
            var buffer = [UInt8](repeating: 0xAA, count: count + 8)
            let decoded = buffer.withUnsafeMutableBufferPointer { out in
                text.withUnsafeBufferPointer { Base64URL.decode($0, into: out.baseAddress) }
            }
            #expect(decoded, "length \(length)")
            #expect(Array(buffer[..<count]) == bytes, "length \(length)")
            #expect(buffer[count...].allSatisfy { $0 == 0xAA }, "length \(length)")
        }
    }

    @Test func rfc4648Vectors() {
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test(arguments: ["Zg==", "Zm8=", "Zg=", "Zm9v====", "=", "===="])
    func paddingIsRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["+_-_", "-/-_", "+/+/", "Zm9v+w", "Zm9v/w"])
    func standardAlphabetIsRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["Zh", "Zm9", "Zm9vYh", "Zm9vYmF", "_x", "__9"])
    func nonZeroTrailingBitsAreRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func canonicalNeighboursOfTrailingBitCasesAreAccepted() {
        #expect(Base64URL.decode("Zg") == Array("f".utf8))
        #expect(Base64URL.decode("Zm8") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm9vYmE") == Array("fooba".utf8))
        #expect(Base64URL.decode("_w") == [0xFF])
        #expect(Base64URL.decode("__8") == [0xFF, 0xFF])
    }

    @Test(arguments: ["Z", "Zm9vY", "Zm9vYmFyZ", "A"])
    func lengthOneModuloFourIsRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["Zm9 v", "Zm9v\n", " Zm9v", "Zm9v.", "Zm\u{00E9}9v"])
    func otherCharactersAreRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
