import Testing

@testable import AppleSignIn

/// A token's parts are split where its dots are, whichever byte of an eight-byte word they fall on, and a token with
/// more than three parts is told so, though the third dot is looked for only when decoding fails.
@Suite struct TokenSplitTests {
    @Test func dotsAreFoundAtEveryOffsetOfAWord() {
        for length in 0..<40 {
            for dot in 0..<max(length, 1) {
                var bytes = [UInt8](repeating: UInt8(ascii: "A"), count: length)
                if dot < length { bytes[dot] = UInt8(ascii: ".") }
                for start in 0...length {
                    let expected = bytes[start...].firstIndex(of: UInt8(ascii: "."))
                    let found = bytes.withUnsafeBufferPointer { SignedAppleJWT.dotOffset(in: $0, from: start) }
                    #expect(found == expected, "length \(length), dot \(dot), start \(start)")
                }
            }
        }
    }

    @Test func aTokenWithAFourthPartIsRefusedAsStructure() {
        for token in ["a.b.c.d", "eyJ9.eyJ9.c2ln.", "a.b.c..", "a.b.c.d.e"] {
            #expect(throws: AppleSignInError.self) { try SignedAppleJWT.decode(token) }
            do {
                _ = try SignedAppleJWT.decode(token)
            } catch {
                #expect(error.description.contains("three dot-separated parts"), "\(token): \(error)")
            }
        }
    }
}
