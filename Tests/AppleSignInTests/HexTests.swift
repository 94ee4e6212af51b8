import Testing

@testable import AppleSignIn

/// Lower-case hex, as refresh-token hashes and data-key ids are stored: every byte, from contiguous storage and from
/// any other sequence, and back.
@Suite struct HexTests {
    private func reference(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }.joined()
    }

    @Test func everyByteIsWrittenAsTwoLowerCaseDigits() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.encode(all) == reference(all))
        #expect(Hex.encode(all).utf8.count == 512)
        #expect(Hex.decode(Hex.encode(all)) == all)
    }

    @Test func eachLengthFromContiguousStorageAndFromAnyOtherSequence() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            #expect(Hex.encode(bytes) == reference(bytes))
            #expect(Hex.encode(bytes[...]) == reference(bytes))
            // A lazy map has no contiguous storage: the other path.
            #expect(Hex.encode(bytes.lazy.map { $0 }) == reference(bytes))
        }
    }
}
