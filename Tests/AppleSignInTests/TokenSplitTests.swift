import Foundation
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

    @Test func dotsAmongAnyBytesAreFoundFirstToLast() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0..<48, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Dots, and their neighbours in the alphabet ('-' 0x2D, '/' 0x2F), at a few places.
            for _ in 0..<Int.random(in: 0...3, using: &generator) where length > 0 {
                bytes[Int.random(in: 0..<length, using: &generator)] = [0x2D, 0x2E, 0x2F].randomElement(
                    using: &generator
                )!
            }
            let start = Int.random(in: 0...length, using: &generator)
            let expected = bytes[start...].firstIndex(of: UInt8(ascii: "."))
            let found = bytes.withUnsafeBufferPointer { SignedAppleJWT.dotOffset(in: $0, from: start) }
            #expect(found == expected, "\(bytes) from \(start)")
        }
    }

    @Test func aTokenWithAFourthPartIsRefusedAsStructure() {
        // A header and payload that decode, and a dot inside the signature: the case the split no longer scans for.
        let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8))
        let payload = Base64URL.encode(Array("{}".utf8))
        for (token, reason) in [
            ("\(header).\(payload).c2ln.eA", "token is not three dot-separated parts"),
            ("\(header).\(payload).c2ln*eA", "signature is not base64url"),
        ] {
            do {
                _ = try SignedAppleJWT.decode(token)
                Issue.record("\(token) decoded")
            } catch {
                #expect(error.description.contains(reason), "\(token): \(error)")
            }
        }
        #expect(throws: Never.self) { try SignedAppleJWT.decode("\(header).\(payload).c2ln") }

        for token in ["a.b.c.d", "eyJ9.eyJ9.c2ln.", "a.b.c..", "a.b.c.d.e"] {
            #expect(throws: AppleSignInError.self) { try SignedAppleJWT.decode(token) }
            do {
                _ = try SignedAppleJWT.decode(token)
            } catch {
                #expect(error.description.contains("three dot-separated parts"), "\(token): \(error)")
            }
        }
    }

    /// The three parts are decoded side by side into one buffer: each must read back as its own decoding, whatever
    /// the parts' lengths, and a token with several bad parts is told about the first one used (header, its JSON,
    /// signature, payload), as when each part was decoded on its own.
    @Test func partsDecodeIntoTheirOwnRangesAndFailInOrder() throws {
        let headers = [
            Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8)), Base64URL.encode(Array("[]".utf8)), "", "A",
            "e*J9",
        ]
        let payloads = [
            Base64URL.encode(Array(#"{"sub":"x"}"#.utf8)), Base64URL.encode([0xFF, 0x00]), "", "A", "e$J9",
        ]
        let signatures = [
            Base64URL.encode((0..<256).map { UInt8($0) }), Base64URL.encode([7]), Base64URL.encode([7, 8]), "", "A",
            "c2ln*",
        ]
        for header in headers {
            for payload in payloads {
                for signature in signatures {
                    let token = "\(header).\(payload).\(signature)"
                    let decodedHeader = Base64URL.decode(header)
                    let expectedFailure: String? =
                        if decodedHeader == nil {
                            "header is not base64url"
                        } else if (try? JSONReader.parseObject(decodedHeader!)) == nil {
                            "header is not a JSON object"
                        } else if Base64URL.decode(signature) == nil {
                            "signature is not base64url"
                        } else if Base64URL.decode(payload) == nil {
                            "payload is not base64url"
                        } else {
                            nil
                        }
                    do {
                        let parts = try SignedAppleJWT.decode(token)
                        #expect(expectedFailure == nil, "\(token)")
                        // Checked against Foundation's decoder, which shares no code with siwa's.
                        #expect(Array(parts.headerBytes) == foundationDecoded(header), "\(token)")
                        #expect(Array(parts.payload) == foundationDecoded(payload), "\(token)")
                        #expect(
                            Array(parts.header.bytes[parts.signatureRange]) == foundationDecoded(signature),
                            "\(token)"
                        )
                    } catch {
                        #expect(
                            expectedFailure.map { error.description.contains($0) } == true,
                            "\(token): \(error), expected \(expectedFailure ?? "success")"
                        )
                    }
                }
            }
        }
    }

    /// Base64url decoded by Foundation (the standard alphabet, padded).
    private func foundationDecoded(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
