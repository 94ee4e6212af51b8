import HTTPTypes
import Hummingbird
import Testing

@testable import AuthServer

/// The byte-level readers of request metadata that every request passes through: the JSON media type and the path
/// forms the rate limiter folds together. The routes' own tests check the same rules over HTTP.
@Suite struct RequestRulesTests {
    @Test func jsonMediaTypes() {
        for accepted in [
            "application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ",
            "\tapplication/json\t;q=1", "application/vnd.api+json", "APPLICATION/PROBLEM+JSON", "application/+json",
        ] {
            #expect(Request.isJSON(accepted), "\(accepted)")
        }
        for refused in [
            nil, "", ";", "text/plain", "application/jsonx", "application/json-patch", "text/json", "json",
            "application/x-www-form-urlencoded", "multipart/form-data", "application/ json", "application/json\u{A0}",
            "xapplication/json", "application/xml+jsonx", "application+json",
        ] {
            #expect(!Request.isJSON(refused), "\(refused ?? "nil")")
        }
    }

    /// Client addresses, read byte by byte for every rate-limited request: dotted quads of decimal numbers up to 255,
    /// IPv6 with IPv4-mapped addresses as their IPv4 bytes, and nothing else; the rate limiter's bucket of each.
    @Test func clientAddressesAreReadStrictly() {
        let accepted: [(String, [UInt8])] = [
            ("127.0.0.1", [127, 0, 0, 1]), ("0.0.0.0", [0, 0, 0, 0]), ("255.255.255.255", [255, 255, 255, 255]),
            ("10.020.3.4", [10, 20, 3, 4]), ("::ffff:192.0.2.7", [192, 0, 2, 7]),
            ("2001:db8::1", [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]),
        ]
        for (text, bytes) in accepted {
            #expect(AddressRanges.parse(text) == bytes, "\(text)")
        }
        for refused in [
            "", ".", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.", "256.0.0.1", "1.2.3.256", "999.1.1.1",
            "0001.2.3.4", "+1.2.3.4", "-0.1.2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.a", "\u{0663}.1.1.1", "1.2.3.4/8",
            "1.2.3.4%eth0", "localhost", "::ffff:1.2.3", "2001:db8:::1",
        ] {
            #expect(AddressRanges.parse(refused) == nil, "\(refused)")
        }
        #expect(RateLimiter.bucketKey("203.0.113.9") == "203.0.113.9")
        #expect(RateLimiter.bucketKey("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64")
        #expect(RateLimiter.bucketKey(nil) == "unknown")
    }
}
