import AppleSignIn
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Synchronization
import Testing

@testable import AuthServer
@testable import SiwaCLI

/// No client writes a line of its own, or a terminal's control sequence, into siwa's text log (the default format):
/// newlines, CR, ESC, NUL, DEL, C1 controls and bytes that are not UTF-8, sent through everything a client controls
/// that can reach a line, come back escaped, and a refusal quotes an unverified value only when it is short and plain.
@Suite("Server: no client writes the log")
struct LogInjectionTests {
    /// What a client puts in a value to forge a line: a newline and a whole line of its own, CR, ESC (a colour and a
    /// screen clear), NUL, DEL, a C1 control and a line separator.
    static let forged =
        "x\n2026-12-01T00:00:00+0000 error siwa: [AuthServer] FORGED\r\u{1B}[31m\u{1B}[2J\u{0}\u{7F}\u{9B}\u{2028}y"

    /// Whether a line holds nothing a terminal acts on and nothing that starts another line.
    static func isOneSafeLine(_ line: String) -> Bool {
        guard line.hasSuffix("\n") else { return false }
        let body = line.unicodeScalars.dropLast()
        return !body.contains { scalar in
            scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) || scalar.value == 0x2028
                || scalar.value == 0x2029
        }
    }

    @Test func valuesAreEscapedAndQuotedOnlyWhenPlain() {
        #expect(LoggedText.escaped("plain text, é and ü") == "plain text, é and ü")
        #expect(
            LoggedText.escaped("a\nb\r\t\\\u{1B}[0m\u{0}\u{7F}\u{85}\u{2028}")
                == #"a\nb\r\t\\\u{1b}[0m\u{0}\u{7f}\u{85}\u{2028}"#
        )
        #expect(LoggedText.quoted("W6WcOKB", limit: 64) == "'W6WcOKB'")
        #expect(LoggedText.quoted("a'b", limit: 64) == "(a value of 3 bytes, not shown)")
        #expect(LoggedText.quoted(String(repeating: "k", count: 65), limit: 64) == "(a value of 65 bytes, not shown)")
        #expect(LoggedText.quoted(Self.forged, limit: 200).hasPrefix("(a value of"))
        let event = LogEvent(
            level: .info,
            message: "refused \(Self.forged)",
            metadata: ["reason": "\(Self.forged)", Self.forged: "key"],
            source: "AuthServer",
            file: #fileID,
            function: #function,
            line: #line
        )
        let line = TextLogHandler.line(event, label: "siwa", metadata: [:], provider: nil, time: "t")
        #expect(Self.isOneSafeLine(line), "\(line.debugDescription)")
        #expect(line.contains(#"x\n2026-12-01T00:00:00+0000 error siwa: [AuthServer] FORGED\r\u{1b}[31m"#))
    }

    /// Through a running server at debug: identity tokens and Apple notifications whose JWS header carries the forged
    /// text (refused before any signature is checked, which is where their reason quoted it), a token's claims, a
    /// body's field names, query strings, user agents and forwarded headers; then every line the server wrote.
    @Test func noRequestWritesALineOfItsOwnInTheTextLog() async throws {
        let capture = LogRedactionTests.Capture(format: .text)
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        configuration.compatibility = .all
        configuration.notificationRateLimit = nil
        try await ServerHarness.run(
            configuration: configuration,
            logger: capture.logger(level: .debug).addingSiwaRequestID()
        ) { harness in
            let forgedJSON = try Self.jsonString(Self.forged)
            func jws(header: String, claims: String = #"{"sub":"x"}"#) -> String {
                Base64URLText.encode(Array(header.utf8)) + "." + Base64URLText.encode(Array(claims.utf8)) + ".c2ln"
            }
            // The kid, the alg and a claim of the header and claims nothing has verified; and bytes that are no UTF-8.
            let tokens = [
                jws(header: #"{"alg":"RS256","kid":\#(forgedJSON)}"#),
                jws(header: #"{"alg":\#(forgedJSON),"kid":"k"}"#),
                jws(header: #"{"alg":"RS256","kid":"k"}"#, claims: #"{"iss":\#(forgedJSON),"sub":\#(forgedJSON)}"#),
                Base64URLText.encode([0x7B, 0x22, 0x6B, 0x69, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0x0A, 0x1B, 0x22, 0x7D])
                    + ".e30.c2ln",
            ]
            var refusals: [String] = []
            for token in tokens {
                let native = try await harness.call(
                    .post,
                    "/auth/apple/native",
                    json: ["identityToken": token, "authorizationCode": "c.0.x"]
                )
                #expect(native.status == .unauthorized)
                refusals.append(native.json.string("message") ?? "")
                let notification = try await harness.call(.post, "/auth/apple/notifications", json: ["payload": token])
                #expect(notification.status.code >= 400)
                let serviceStack = try await harness.call(
                    .post,
                    "/api/Authenticate",
                    json: ["provider": "apple", "accessToken": token]
                )
                #expect(serviceStack.status.code >= 400)
            }
            #expect(refusals.first?.contains("not shown") == true, "the kid was described, not quoted: \(refusals)")
            // Field names, in JSON, where a refusal names the field.
            _ = try await harness.call(.post, "/auth/apple/native", rawBody: #"{\#(forgedJSON):1}"#)
            _ = try await harness.call(.post, "/api/Authenticate", rawBody: #"{\#(forgedJSON):1,\#(forgedJSON):2}"#)
            // Query strings (logged at debug as the path), and a prompt the OpenID provider refuses by name.
            let encoded = Self.forged.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            for path in ["/no/such/route?q=\(encoded)%FF%FE", "/oauth/authorize?prompt=\(encoded)", "/\(encoded)"] {
                _ = try await harness.server.execute(uri: path, method: .get)
            }
            // Headers: what HTTP lets through of the forged text (no CR, LF or NUL), as a user agent, a forwarded
            // client and a request id.
            let headerText = "Mozilla \u{1B}[31mred\u{1B}[0m \u{7F}\u{9B}end"
            for name in ["User-Agent", "X-Forwarded-For", "X-Request-Id", "Forwarded"] {
                let headers: HTTPFields = [
                    HTTPField.Name(name)!: headerText, .contentType: "application/json",
                ]
                _ = try await harness.server.execute(
                    uri: "/auth/apple/native",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: #"{"identityToken":"a.b.c"}"#)
                )
            }
        }
        let lines = capture.lines.withLock { $0 }
        #expect(lines.count > 20, "the requests were logged: \(lines.count) lines")
        let unsafe = lines.filter { !Self.isOneSafeLine($0) }
        #expect(unsafe.isEmpty, "lines a client wrote into:\n\(unsafe.map(\.debugDescription).joined(separator: "\n"))")
        let all = lines.joined()
        #expect(
            !all.split(separator: "\n").contains {
                $0.hasPrefix("2026-12-01T00:00:00+0000 error siwa: [AuthServer] FORGED")
            }
        )
        #expect(all.contains(#"\u{1b}"#), "the forged text reached the log, escaped")
    }

    static func jsonString(_ text: String) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast()
            .description
    }
}
