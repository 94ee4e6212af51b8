import AppleSignIn
import Testing

/// Where a web sign-in may send the browser: paths, allow-listed origins, allow-listed Android packages, nothing else.
@Suite("ReturnURLPolicy")
struct ReturnURLPolicyTests {
    private let policy = try! ReturnURLPolicy(
        allowedOrigins: ["https://allowed.com", "http://127.0.0.1:8080", "https://app.example.com:8443/"],
        allowedAndroidPackages: ["com.example.app"]
    )

    @Test(arguments: ["/", "/login", "/account?tab=1&x=%20y", "/a/b#frag", "/caf%C3%A9"])
    func relativePathsAreAccepted(_ path: String) throws {
        #expect(try policy.resolve(path) == .path(path))
    }

    @Test func allowListedOriginsAreAcceptedWithExactSchemeHostAndPort() throws {
        #expect(try policy.resolve("https://allowed.com") == .origin("https://allowed.com"))
        #expect(try policy.resolve("https://allowed.com/welcome?x=1") == .origin("https://allowed.com/welcome?x=1"))
        #expect(try policy.resolve("HTTPS://ALLOWED.COM:443/x") == .origin("https://allowed.com/x"))
        #expect(try policy.resolve("http://127.0.0.1:8080/login") == .origin("http://127.0.0.1:8080/login"))
        #expect(try policy.resolve("https://app.example.com:8443/") == .origin("https://app.example.com:8443/"))
        #expect(policy.allowedOrigins.contains("https://app.example.com:8443"))
    }

    @Test(arguments: [
        "//evil.com", "///evil.com", "/\\evil.com", "\\\\evil.com", "/\\/evil.com",
        "https://evil.com", "http://allowed.com", "https://allowed.com:444", "https://allowed.com.evil.com",
        "https://allowed.com@evil.com", "https://user:pass@allowed.com/", "https://evil.com#https://allowed.com",
        "https://evil.com?https://allowed.com", "https:allowed.com", "https:/allowed.com", "https:\\\\allowed.com",
        "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox", "ftp://allowed.com", "//allowed.com", "evil.com", "login", "./login", "",
        " /login", "/login ", "/\tevil.com", "/\n/evil.com", "\u{0}/login", "/caf\u{E9}",
        "%2F%2Fevil.com", "/%2F%2Fevil.com", "/%2f%2fevil.com", "/%5Cevil.com", "/%252F%252Fevil.com",
        "/%0d%0aSet-Cookie:x=1", "/%zz", "https://allowed.com//evil.com", "https://allowed.com%2F@evil.com",
        "https://[::1]/", "http://127.0.0.1:80/", "http://127.0.0.1:8080.evil.com/",
        "android:com.evil.app", "android:", "android:com", "android:com..example", "android:1com.example",
        "android:com.example.app/x", "android:com.example.app;evil", "android:com.example-app",
    ])
    func hostileReturnURLsAreRefused(_ requested: String) {
        #expect(throws: AppleSignInError.malformed) { try policy.resolve(requested) }
    }

    @Test func androidPackagesOnTheListAreAccepted() throws {
        #expect(try policy.resolve("android:com.example.app") == .android(package: "com.example.app"))
        #expect(
            ReturnURLPolicy.Destination.android(package: "com.example.app").stringValue == "android:com.example.app"
        )
    }

    @Test func theIntentURLCarriesEveryCallbackParameterPercentEncoded() {
        let url = ReturnURLPolicy.androidIntentURL(
            package: "com.example.app",
            parameters: [
                ("code", "c.1"), ("id_token", "a.b.c"), ("state", "s t"),
                ("user", #"{"name":{"firstName":"Ann"}}"#),
            ]
        )
        #expect(
            url
                == "intent://callback?code=c.1&id_token=a.b.c&state=s%20t"
                + "&user=%7B%22name%22%3A%7B%22firstName%22%3A%22Ann%22%7D%7D"
                + "#Intent;package=com.example.app;scheme=signinwithapple;end"
        )
    }

    @Test func malformedAllowListEntriesAreConfigurationErrors() {
        for origin in ["allowed.com", "https://allowed.com/path", "https://user@allowed.com", "javascript:x", ""] {
            #expect(throws: AppleSignInError.invalidConfiguration) {
                try ReturnURLPolicy(allowedOrigins: [origin])
            }
        }
        for package in ["com", "com.", ".com.example", "com.example-app", "com.1example", "com/example"] {
            #expect(throws: AppleSignInError.invalidConfiguration) {
                try ReturnURLPolicy(allowedAndroidPackages: [package])
            }
        }
    }

    @Test func originsAreSerializedWithoutDefaultPorts() {
        #expect(ReturnURLPolicy.origin(of: "https://Example.com:443/x?y") == "https://example.com")
        #expect(ReturnURLPolicy.origin(of: "http://127.0.0.1:8080/login") == "http://127.0.0.1:8080")
        #expect(ReturnURLPolicy.origin(of: "null") == nil)
        #expect(ReturnURLPolicy.origin(of: "https://a@b.com") == nil)
        #expect(policy.allowsOrigin("https://allowed.com"))
        #expect(!policy.allowsOrigin("https://allowed.com.evil.com"))
    }
}
