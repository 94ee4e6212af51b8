import Testing

@testable import AppleSignIn

/// The JSON siwa writes itself (token headers and claims): strings escaped as JSON requires, whatever path they take.
@Suite struct JSONWriterTests {
    private func written(_ string: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(string, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func stringsWithoutEscapesAreCopiedAsTheyAre() {
        #expect(written("") == #""""#)
        #expect(written("0192f2a4-7c1b-7d2e-8f3a-0123456789ab") == #""0192f2a4-7c1b-7d2e-8f3a-0123456789ab""#)
        #expect(written("Zoë O’Brien 山田") == "\"Zoë O’Brien 山田\"")
        #expect(written("a/b ~\u{7F}") == "\"a/b ~\u{7F}\"")
    }

    @Test func quotesBackslashesAndControlCharactersAreEscaped() {
        #expect(written(#"say "hi""#) == #""say \"hi\"""#)
        #expect(written(#"C:\path"#) == #""C:\\path""#)
        #expect(written("a\nb\rc\td") == #""a\nb\rc\td""#)
        #expect(written("\u{0}\u{1F}é") == "\"\\u0000\\u001fé\"")
        // Escapes first, last and side by side, between runs copied as they are.
        #expect(written("\"\\") == #""\"\\""#)
        #expect(written("\nx\n") == #""\nx\n""#)
        #expect(written("ab\u{8}\u{C}cd") == #""ab\u0008\u000ccd""#)
    }

    @Test func everyStringReadsBackAsWritten() throws {
        let pieces = ["a", "é", "山", "\"", "\\", "\n", "\u{0}", "\u{1F}", " ", "/", "\u{7F}", "😀"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let string = (0..<Int.random(in: 0...12, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(try JSONReader.parse(Array(written(string).utf8)) == .string(string), "\(string.debugDescription)")
        }
    }

    @Test func anObjectReadsBackAsWritten() throws {
        let bytes = JSONWriter.object(["sub": .string("a\"b"), "iat": .integer(1_700_000_000), "ok": .bool(true)])
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"sub":"a\"b","iat":1700000000,"ok":true}"#)
    }
}
