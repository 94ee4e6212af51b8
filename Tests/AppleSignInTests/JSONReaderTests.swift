import AppleSignIn
import Testing

@Suite("JSON reader")
struct JSONReaderTests {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONReader.parse(Array(text.utf8))
    }

    private func expectRefused(
        _ bytes: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(throws: JSONReader.Failure.self, sourceLocation: sourceLocation) { try JSONReader.parse(bytes) }
    }

    private func expectRefused(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectRefused(Array(text.utf8), sourceLocation: sourceLocation)
    }

    // MARK: - Accepted

    @Test func literals() throws {
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse(" null \n") == .null)
    }

    @Test func stringEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == .string("a\"b\\c/d\u{08}e\u{0C}f\ng\rh\ti"))
        #expect(try parse(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(try parse(#""plain""#) == .string("plain"))
        #expect(try parse(#""""#) == .string(""))
    }

    @Test func surrogatePairsBecomeOneScalar() throws {
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
    }

    @Test func rawUTF8IsKept() throws {
        #expect(try parse(#""Zoë 😀""#) == .string("Zoë 😀"))
        #expect(try parse(#""Zoë\n""#) == .string("Zoë\n"))
    }

    @Test(arguments: ["0", "-0", "7", "-12", "1750000000", "12.5", "0.25", "1e3", "1E+2", "2.5e-3", "-0.0"])
    func numbersKeepTheirText(text: String) throws {
        #expect(try parse(text) == .number(text))
    }

    @Test func numbersConvert() throws {
        #expect(try parse("1750000000123").int64Value == 1_750_000_000_123)
        #expect(try parse("-42").int64Value == -42)
        #expect(try parse("1.5").int64Value == nil)
        #expect(try parse("1.5").doubleValue == 1.5)
        #expect(try parse("2e3").doubleValue == 2000)
        // Larger than Int64: kept as text, not an integer.
        #expect(try parse("99999999999999999999") == .number("99999999999999999999"))
        #expect(try parse("99999999999999999999").int64Value == nil)
    }

    @Test func nestedDocument() throws {
        let value = try parse(#" { "a" : [1, {"b": null}, []], "c": {"d": {"e": "f"}}, "g": {} } "#)
        #expect(
            value
                == .object([
                    JSONMember(
                        key: "a",
                        value: .array([.number("1"), .object([JSONMember(key: "b", value: .null)]), .array([])])
                    ),
                    JSONMember(
                        key: "c",
                        value: .object([
                            JSONMember(key: "d", value: .object([JSONMember(key: "e", value: .string("f"))]))
                        ])
                    ),
                    JSONMember(key: "g", value: .object([])),
                ])
        )
        #expect(value["c"]?["d"]?["e"]?.stringValue == "f")
        #expect(value["missing"] == nil)
        #expect(value["a"]?["b"] == nil)
    }

    @Test func parseObjectRefusesOtherValues() throws {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parseObject(Array("[1]".utf8)) }
        #expect(try JSONReader.parseObject(Array("{}".utf8)) == .object([]))
    }

    @Test func lenientBooleans() throws {
        #expect(try parse("true").lenientBoolValue == true)
        #expect(try parse(#""false""#).lenientBoolValue == false)
        #expect(try parse(#""yes""#).lenientBoolValue == nil)
        #expect(try parse("1").lenientBoolValue == nil)
    }

    // MARK: - Refused

    @Test func duplicateKeyIsRefused() throws {
        expectRefused(#"{"aud":"a","aud":"b"}"#)
        expectRefused(#"{"x":{"k":1,"k":1}}"#)
        // The same key in different objects is fine.
        _ = try parse(#"{"k":{"k":1}}"#)
    }

    @Test(arguments: ["{} x", "1 2", "{}{}", #""a""b""#, "[1]]", "null,"])
    func trailingContentIsRefused(text: String) {
        expectRefused(text)
    }

    @Test func nestingDeeperThan32IsRefused() throws {
        let deepest = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        _ = try parse(deepest)
        expectRefused(String(repeating: "[", count: 33) + String(repeating: "]", count: 33))
        let objects = String(repeating: #"{"a":"#, count: 33) + "1" + String(repeating: "}", count: 33)
        expectRefused(objects)
        // Not a stack overflow for absurd depth.
        expectRefused(String(repeating: "[", count: 100_000))
    }

    @Test func invalidUTF8IsRefused() {
        let quote = UInt8(ascii: "\"")
        expectRefused([quote, 0xFF, quote])
        expectRefused([quote, 0xC3, quote])  // truncated sequence
        expectRefused([quote, 0xC0, 0xAF, quote])  // overlong '/'
        expectRefused([quote, 0xED, 0xA0, 0x80, quote])  // an encoded surrogate
        // The slow path (after an escape) validates too.
        expectRefused([quote, UInt8(ascii: "\\"), UInt8(ascii: "n"), 0xFF, quote])
    }

    @Test func controlCharactersInStringsAreRefused() {
        let quote = UInt8(ascii: "\"")
        for control: UInt8 in [0x00, 0x09, 0x0A, 0x0D, 0x1F] {
            expectRefused([quote, UInt8(ascii: "a"), control, quote])
            expectRefused([quote, UInt8(ascii: "\\"), UInt8(ascii: "t"), control, quote])
        }
    }

    @Test(arguments: ["01", "-01", "00", "007", "-00.5"])
    func leadingZerosAreRefused(text: String) {
        expectRefused(text)
    }

    @Test(arguments: [
        #""\ud83d""#, #""\ude00""#, #""\ud83d\u0041""#, #""\ud83dx""#, #""\ude00\ud83d""#, #""\ud83d\ud83d""#,
    ])
    func unpairedSurrogatesAreRefused(text: String) {
        expectRefused(text)
    }

    @Test(arguments: [
        "", " ", "tru", "nul", "True", "[1,]", "[,1]", #"{"a" 1}"#, #"{"a":1,}"#, "{a:1}", "'a'", ".5", "1.", "+1",
        "1e", "-", "NaN", "Infinity", #""abc"#, #""\x""#, #""\u12G4""#, #""\u12""#, "[", #"{"a""#,
    ])
    func otherMalformedDocumentsAreRefused(text: String) {
        expectRefused(text)
    }

    @Test func failureNamesOffsetNotContent() {
        let secret = "eyJhbGciOi-secret"
        let error = #expect(throws: JSONReader.Failure.self) { try parse(#"{"t":"\#(secret)",}"#) }
        #expect(error?.offset == 25)
        #expect(error?.description.contains(secret) == false)
    }

    /// The entry for bytes where they are (a request body in a `ByteBuffer`) reads exactly as the array entry.
    @Test func bytesWhereTheyAreParseAsAnArray() throws {
        for text in [#"{"a":[1,{"b":null}],"c":"\u00e9"}"#, #" {} "#, #"[1]"#, #"{"a":1}x"#, #"{"a":1,"a":2}"#, ""] {
            let bytes = Array(text.utf8)
            let expected = Result { try JSONReader.parseObject(bytes) }
            let actual = Result { try bytes.withUnsafeBytes { try JSONReader.parseObject(bytes: $0) } }
            switch (expected, actual) {
            case (.success(let expected), .success(let actual)): #expect(expected == actual, "\(text)")
            case (.failure(let expected), .failure(let actual)): #expect("\(expected)" == "\(actual)", "\(text)")
            default: Issue.record("\(text): \(expected) against \(actual)")
            }
        }
    }

    /// A claims view compares a plain string where it is, and an escaped or non-ASCII one as a string, so that both
    /// spellings of one value match, and anything else (absent, another string, another type) matches nothing.
    @Test func viewComparesAStringWithoutMakingIt() throws {
        let candidates = ["https://appleid.apple.com", "https://account.apple.com"]
        let cases: [(String, String?)] = [
            (#"{"iss":"https://appleid.apple.com"}"#, "https://appleid.apple.com"),
            (#"{"iss":"https://account.apple.com","sub":"x"}"#, "https://account.apple.com"),
            (#"{"iss":"https:\/\/appleid.apple.com"}"#, "https://appleid.apple.com"),
            (#"{"iss":"https://appleid.apple.co\u006d"}"#, "https://appleid.apple.com"),
            (#"{"iss":"https://appleid.apple.com "}"#, nil),
            (#"{"iss":"https://appleid.apple.co"}"#, nil),
            (#"{"iss":"https://appleid.applé.com"}"#, nil),
            (#"{"iss":""}"#, nil),
            (#"{"iss":1}"#, nil),
            (#"{"iss":null}"#, nil),
            (#"{"iss":["https://appleid.apple.com"]}"#, nil),
            (#"{"is":"https://appleid.apple.com"}"#, nil),
            (#"{}"#, nil),
        ]
        for (document, expected) in cases {
            let view = try JSONReader.parseObjectView(Array(document.utf8))
            #expect(view.string("iss", isOneOf: candidates) == expected, "\(document)")
        }
    }

    /// A number read in place is what reading the value gives: integers of up to fifteen digits where they are, every
    /// other number, string or value the usual way.
    @Test func viewReadsANumberAsTheValueReadsIt() throws {
        for value in [
            "0", "7", "1750000000", "999999999999999", "1000000000000000", "9223372036854775807", "9223372036854775808",
            "-1", "-0", "1.5", "1e3", "1E+2", "0.0", "17500000000000000000000", #""1750000000""#, "true", "null", "[1]",
            "{}", " 12 ",
        ] {
            let view = try JSONReader.parseObjectView(Array(#"{"a":1,"exp":\#(value),"z":2}"#.utf8))
            let expected = view["exp"]?.doubleValue
            #expect(view.number("exp") == expected, "\(value)")
        }
        let view = try JSONReader.parseObjectView(Array(#"{"ex":1,"expp":2}"#.utf8))
        #expect(view.number("exp") == nil)
    }

    /// A member's text is handed over in place only when it is a string in ASCII without escapes; every other value,
    /// and an absent member, is told apart, so that the caller reads it the usual way.
    @Test func aPlainStringIsHandedOverWhereItIs() throws {
        let view = try JSONReader.parseObjectView(
            Array(#"{"a":"com.example.app","b":"com\u002eexample","c":"é","d":1,"e":null,"f":["x"],"g":""}"#.utf8)
        )
        func text(_ name: String) -> String? {
            switch view.withPlainString(name, { String(decoding: $0, as: UTF8.self) }) {
            case .plain(let text): return text
            case .notPlain: return "not plain"
            case .absent: return nil
            }
        }
        #expect(text("a") == "com.example.app")
        #expect(text("g") == "")
        for name in ["b", "c", "d", "e", "f"] { #expect(text(name) == "not plain", "\(name)") }
        #expect(text("h") == nil)
        #expect(text("aa") == nil)
    }
}
