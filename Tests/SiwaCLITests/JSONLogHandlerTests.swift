import AppleSignIn
import Foundation
import Logging
import Testing

@testable import SiwaCLI

/// `SIWA_LOG_FORMAT=json`: one JSON object a line, its time in UTC with milliseconds, written without Foundation's
/// formatters.
@Suite struct JSONLogHandlerTests {
    /// The time as Foundation's ISO 8601 style wrote it, with milliseconds and in whole seconds, from 1970 to 9999,
    /// leap days and the ends of days and years among them.
    @Test func timeIsWrittenAsFoundationWroteIt() {
        var generator = SystemRandomNumberGenerator()
        var seconds: [Int64] = [0, 951_782_400, 951_868_799, 1_767_225_599, 4_107_542_400, 253_402_300_799]
        for _ in 0..<2_000 { seconds.append(Int64.random(in: 0...253_402_300_799, using: &generator)) }
        for second in seconds {
            for milliseconds in [0, 1, 9, 10, 99, 100, 500, 998, 999, Int.random(in: 0...999, using: &generator)] {
                // 0.4 ms past the millisecond, so that Foundation's reading of the `Double` gives that millisecond
                // whether it rounds or truncates.
                let date = Date(timeIntervalSince1970: Double(second) + Double(milliseconds) / 1_000 + 0.000_4)
                let foundation =
                    date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)) + "Z"
                var out: [UInt8] = []
                ISO8601Time.append(seconds: second, milliseconds: milliseconds, to: &out)
                #expect(String(decoding: out, as: UTF8.self) == foundation, "\(second) s \(milliseconds) ms")
            }
            // Whole seconds (an account's `createdAt`), as Foundation's default ISO 8601 style writes them.
            var out: [UInt8] = []
            ISO8601Time.append(seconds: second, to: &out)
            let whole = Date(timeIntervalSince1970: Double(second) + 0.5).formatted(.iso8601)
            #expect(String(decoding: out, as: UTF8.self) == whole, "\(second) s")
        }
    }

    @Test func theLinesTimeIsNowInWholeSecondsAndMilliseconds() {
        let before = Date().timeIntervalSince1970.rounded(.down)
        let now = JSONLogHandler.now()
        let after = Date().timeIntervalSince1970
        #expect(Double(now.seconds) >= before && Double(now.seconds) <= after)
        #expect((0...999).contains(now.milliseconds))
    }

    @Test func aLineIsOneJSONObjectWithTheMetadataByKey() throws {
        let provider = Logger.MetadataProvider { ["request": "from-provider", "shared": "provider"] }
        let event = LogEvent(
            level: .info,
            message: "signed \"in\"\n",
            metadata: ["user": "u-1", "shared": "event", "level": "spoofed", "a": "first"],
            source: "AuthServer",
            file: #fileID,
            function: #function,
            line: #line
        )
        let line = JSONLogHandler.line(
            event,
            label: "siwa",
            metadata: ["handler": "h", "shared": "handler"],
            provider: provider,
            now: (seconds: 1_800_000_000, milliseconds: 7)
        )
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.hasSuffix("}\n"))
        #expect(text.filter { $0 == "\n" }.count == 1, "the message's newline is escaped")
        #expect(text.hasPrefix(#"{"time":"2027-01-15T08:00:00.007Z","level":"info","label":"siwa","#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: String])
        #expect(
            object == [
                "time": "2027-01-15T08:00:00.007Z", "level": "info", "label": "siwa", "message": "signed \"in\"\n",
                "source": "AuthServer", "a": "first", "handler": "h", "request": "from-provider", "shared": "event",
                "user": "u-1",
            ]
        )
        // Metadata after the line's own fields, sorted by key; a key named as a field is left out.
        let keys = text.matches(of: /"([a-z]+)":/).map { String($0.output.1) }
        #expect(keys == ["time", "level", "label", "message", "source", "a", "handler", "request", "shared", "user"])
    }
}
