import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Web authorization")
struct WebAuthorizationTests {
    static let firstUser = #"{"name":{"firstName":"Jane","lastName":"Doe"},"email":"x@privaterelay.appleid.com"}"#

    /// A form body from name-value pairs, encoded here (independent of the library's encoder).
    private func form(_ pairs: [(String, String)]) -> [UInt8] {
        Array(pairs.map { "\(formEncode($0.0))=\(formEncode($0.1))" }.joined(separator: "&").utf8)
    }

    private func formEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: " "):
                out.append("+")
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    // MARK: - Authorize URL

    @Test func authorizeURLIsExactlyWhatAppleExpects() throws {
        let url = WebAuthorization.authorizeURL(
            baseURL: .apple,
            clientID: "com.example.web",
            redirectURI: "https://example.com/auth/apple/callback",
            state: "s-1",
            nonce: "n_1"
        )
        #expect(
            url
                == "https://appleid.apple.com/auth/authorize?client_id=com.example.web"
                + "&redirect_uri=https%3A%2F%2Fexample.com%2Fauth%2Fapple%2Fcallback"
                + "&response_type=code%20id_token&scope=name%20email&response_mode=form_post&state=s-1&nonce=n_1"
        )
    }

    @Test func authorizeURLEncodesStateAndNonce() throws {
        let url = WebAuthorization.authorizeURL(
            baseURL: try AppleBaseURL("http://127.0.0.1:9090"),
            clientID: "com.example.web",
            redirectURI: "https://example.com/cb?x=1&y=2",
            state: "a&b=c+d e/f",
            nonce: "é"
        )
        #expect(url.hasPrefix("http://127.0.0.1:9090/auth/authorize?"))
        #expect(url.contains("&redirect_uri=https%3A%2F%2Fexample.com%2Fcb%3Fx%3D1%26y%3D2&"))
        #expect(url.contains("&state=a%26b%3Dc%2Bd%20e%2Ff&"))
        #expect(url.hasSuffix("&nonce=%C3%A9"))
    }

    @Test func authorizeURLWithoutNonceOrScopes() {
        let url = WebAuthorization.authorizeURL(
            baseURL: .apple,
            clientID: "com.example.web",
            redirectURI: "https://example.com/cb",
            state: "s",
            nonce: nil,
            scopes: []
        )
        #expect(!url.contains("nonce="))
        #expect(!url.contains("scope="))
        #expect(url.contains("&response_mode=form_post&"))
        #expect(url.hasSuffix("&state=s"))
    }

    @Test func randomTokensAre256BitBase64URL() {
        let first = WebAuthorization.randomToken()
        let second = WebAuthorization.randomToken()
        #expect(first.utf8.count == 43)
        #expect(second.utf8.count == 43)
        #expect(first != second)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        #expect(first.allSatisfy(alphabet.contains))
        #expect(base64URLDecode(first)?.count == 32)
        #expect(WebAuthorization.randomToken(byteCount: 16).utf8.count == 22)
    }

    /// The generator behind tokens and ids fills every byte it is asked for, past `getentropy`'s 256 per call too, and
    /// its fallback fills the rest when the system call fails part way.
    @Test func systemRandomFillsEveryByte() {
        /// Whether every 32 bytes in a row (the last ones overlapping) hold a byte that is not zero: a window left as
        /// the zeros it started with, by chance 2^-256.
        func everyWindowFilled(_ bytes: [UInt8]) -> Bool {
            stride(from: 0, to: bytes.count, by: 32).allSatisfy { start in
                let from = min(start, bytes.count - 32)
                return bytes[from..<from + 32].contains { $0 != 0 }
            }
        }
        for count in [32, 255, 256, 257, 1_000, 65_549] {
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { SystemRandom.fill($0) }
            #expect(everyWindowFilled(bytes), "\(count) bytes")
        }
        var calls = 0
        var bytes = [UInt8](repeating: 0, count: 1_000)
        bytes.withUnsafeMutableBytes { buffer in
            SystemRandom.fill(buffer) { start, length in
                calls += 1
                guard calls == 1 else { return -1 }  // the second call fails: the rest from the fallback
                start.initializeMemory(as: UInt8.self, repeating: 0xAA, count: length)
                return 0
            }
        }
        #expect(calls == 2)
        #expect(bytes.prefix(256).allSatisfy { $0 == 0xAA }, "the first call's bytes kept")
        #expect(everyWindowFilled(Array(bytes.dropFirst(256))), "the fallback filled the rest")
        #expect(SystemRandom.bytes(32) != SystemRandom.bytes(32))
    }

    // MARK: - Callback

    @Test func firstAuthorizationCarriesTheUser() throws {
        let callback = try AuthorizationCallback(
            formBody: form([("state", "s-1"), ("code", "c.1"), ("id_token", "a.b.c"), ("user", Self.firstUser)])
        )
        #expect(
            callback
                == .authorized(
                    code: "c.1",
                    idToken: "a.b.c",
                    state: "s-1",
                    user: AuthorizationUser(firstName: "Jane", lastName: "Doe", email: "x@privaterelay.appleid.com")
                )
        )
        #expect(callback.state == "s-1")
    }

    @Test func middleNameIsKept() throws {
        let user = #"{"name":{"firstName":"Jane","middleName":"Q","lastName":"Doe"},"email":"jane@example.com"}"#
        let callback = try AuthorizationCallback(
            formBody: form([("code", "c.1"), ("id_token", "a.b.c"), ("state", "s"), ("user", user)])
        )
        guard case .authorized(_, _, _, let decoded) = callback else {
            Issue.record("expected .authorized, got \(callback)")
            return
        }
        #expect(
            decoded == AuthorizationUser(firstName: "Jane", middleName: "Q", lastName: "Doe", email: "jane@example.com")
        )
    }

    @Test func returningUserHasNoUserField() throws {
        let callback = try AuthorizationCallback(
            formBody: form([("state", "s"), ("code", "c.2"), ("id_token", "a.b.c")])
        )
        #expect(callback == .authorized(code: "c.2", idToken: "a.b.c", state: "s", user: nil))
    }

    @Test func cancelIsItsOwnOutcome() throws {
        let callback = try AuthorizationCallback(formBody: Array("error=user_cancelled_authorize&state=s".utf8))
        #expect(callback == .cancelled(state: "s"))
        #expect(callback.state == "s")
    }

    @Test func otherErrorsFail() throws {
        let callback = try AuthorizationCallback(formBody: Array("error=invalid_request&state=s".utf8))
        #expect(callback == .failed(error: "invalid_request", state: "s"))
        #expect(
            try AuthorizationCallback(formBody: Array("error=server_error".utf8))
                == .failed(error: "server_error", state: nil)
        )
    }

    @Test(arguments: [
        "code=c&id_token=a.b.c",  // no state
        "state=&code=c&id_token=a.b.c",  // empty state
        "state=s&id_token=a.b.c",  // no code
        "state=s&code=c",  // no id_token
        "state=s&code=&id_token=a.b.c",  // empty code
        "",
    ])
    func missingFieldsAreMalformed(body: String) {
        #expect(throws: AppleSignInError.malformed) { try AuthorizationCallback(formBody: Array(body.utf8)) }
    }

    @Test func repeatedFieldIsMalformed() {
        #expect(throws: AppleSignInError.malformed) {
            try AuthorizationCallback(formBody: Array("state=s&code=c&id_token=a.b.c&state=t".utf8))
        }
        #expect(throws: AppleSignInError.malformed) {
            try AuthorizationCallback(formBody: Array("state=s&code=c&code=d&id_token=a.b.c".utf8))
        }
    }

    @Test(arguments: ["%zz", "%4", "%", "%C3", "%FF"])
    func invalidPercentEncodingIsMalformed(state: String) {
        let body = "state=\(state)&code=c&id_token=a.b.c"
        #expect(throws: AppleSignInError.malformed) { try AuthorizationCallback(formBody: Array(body.utf8)) }
    }

    @Test(arguments: ["not json", "[]", #"{"name":"Jane"}"#, #"{"email":1}"#, #"{"email":"a","email":"b"}"#])
    func userThatIsNotTheExpectedJSONIsMalformed(user: String) {
        #expect(throws: AppleSignInError.malformed) {
            try AuthorizationCallback(
                formBody: form([("state", "s"), ("code", "c"), ("id_token", "a.b.c"), ("user", user)])
            )
        }
    }

    @Test func plusDecodesAsSpace() throws {
        let callback = try AuthorizationCallback(formBody: Array("state=a+b%2Bc&code=c&id_token=a.b.c".utf8))
        #expect(callback.state == "a b+c")
    }

    @Test func oversizedBodyIsMalformed() {
        let body = "state=s&code=c&id_token=a.b.c&pad=" + String(repeating: "x", count: 32 * 1024)
        #expect(throws: AppleSignInError.malformed) { try AuthorizationCallback(formBody: Array(body.utf8)) }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
