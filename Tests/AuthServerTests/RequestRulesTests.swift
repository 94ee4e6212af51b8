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

    @Test func pathsWithEmptySegmentsOrATrailingSlashAreNormalised() {
        for path in ["/a/", "//a", "/a//b", "//", "/auth/apple/authorize/", "a/"] {
            #expect(RateLimitMiddleware.needsNormalizing(path), "\(path)")
        }
        for path in ["/", "", "/a", "/auth/apple/authorize", "a/b", "/é/ü"] {
            #expect(!RateLimitMiddleware.needsNormalizing(path), "\(path)")
        }
    }
}
