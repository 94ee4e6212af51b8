import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

@testable import SiwaCLI

/// The access log: one line per request at info, in the text and the JSON format, and the request id on it, in the
/// `X-Request-Id` answer and on every other line the request causes.
@Suite("Server: the access log and request ids")
struct AccessLogTests {
    /// The lines a logger wrote in the text format (`TextLogHandler`'s, which `SIWA_LOG_FORMAT=text` is), each without
    /// its newline.
    final class TextCapture: Sendable {
        private let capture = LogRedactionTests.Capture(format: .text)

        var logger: Logger { capture.logger(level: .info) }

        var lines: [String] { capture.lines.withLock { $0 }.map { String($0.dropLast()) } }

        var accessLines: [String] { lines.filter { $0.hasSuffix("] request") } }
    }

    /// The JSON lines of `capture`, as objects of strings.
    private static func lines(_ capture: LogRedactionTests.Capture) throws -> [[String: String]] {
        try capture.lines.withLock { $0 }.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
        }
    }

    static let requestID = HTTPField.Name("X-Request-Id")!

    @Test func oneJSONLinePerRequestNamesRouteStatusClientAndCaller() async throws {
        let capture = LogRedactionTests.Capture()
        try await ServerHarness.run(logger: capture.logger(level: .info)) { harness in
            let signIn = try await harness.signIn("logged@example.com")
            let userID = try #require(signIn.json.user.string("id"))
            let access = try #require(signIn.json.string("accessToken"))
            let me = try await harness.call(.get, "/api/me", bearer: access)
            let meID = try #require(me.headers[Self.requestID])
            let refused = try await harness.call(.get, "/api/me", bearer: "not-a-token")
            let unknown = try await harness.call(.get, "/no/such/place?access_token=secret-in-query")

            let all = try Self.lines(capture)
            let lines = all.filter { $0["message"] == "request" }
            #expect(lines.count == 4, "one line per request (the Apple credential is the emulator's): \(lines)")
            let native = try #require(lines.first { $0["route"] == "/auth/apple/native" })
            #expect(native["level"] == "info")
            #expect(native["method"] == "POST")
            #expect(native["status"] == "200")
            #expect(native["client"] == "127.0.0.1")
            #expect(native["user"] == userID, "the account the sign-in signed in")
            #expect(native["session"] != nil)
            #expect(native["duration_ms"]?.wholeMatch(of: /[0-9]+\.[0-9]{3}/) != nil, "\(native)")

            let read = try #require(lines.first { $0["request_id"] == meID })
            #expect(read["route"] == "/api/me")
            #expect(read["status"] == "200")
            #expect(read["user"] == userID)
            #expect(read["session"] == native["session"], "the session the access token belongs to")
            let refusal = try #require(lines.first { $0["request_id"] == refused.headers[Self.requestID] })
            #expect(refusal["status"] == "401")
            #expect(refusal["user"] == nil)
            let missing = try #require(lines.first { $0["request_id"] == unknown.headers[Self.requestID] })
            #expect(missing["route"] == "unmatched")
            #expect(missing["status"] == "404")
            // At info no path: a path or query carries whatever a client puts in it.
            #expect(!all.contains { $0.values.contains { $0.contains("no/such") || $0.contains("secret-in-query") } })
            #expect(lines.allSatisfy { $0["path"] == nil })
        }
    }

    @Test func oneTextLinePerRequestWithTheSameFields() async throws {
        let capture = TextCapture()
        try await ServerHarness.run(logger: capture.logger) { harness in
            let signIn = try await harness.signIn("text@example.com")
            let userID = try #require(signIn.json.user.string("id"))
            let me = try await harness.call(.get, "/api/me", bearer: signIn.json.string("accessToken"))
            let id = try #require(me.headers[Self.requestID])
            let line = try #require(
                capture.accessLines.first { $0.contains("request_id=\(id)") },
                "\(capture.lines)"
            )
            #expect(line.contains(" info siwa: "), "\(line)")
            for field in [
                "method=GET", "route=/api/me", "status=200", "client=127.0.0.1", "user=\(userID)", "session=",
                "duration_ms=",
            ] {
                #expect(line.contains(field), "\(field) in \(line)")
            }
        }
    }

    /// The id answered in `X-Request-Id` is on the access line and on the lines the request's services log with
    /// loggers of their own (the sign-in's "signed in").
    @Test func everyLineARequestCausesCarriesItsID() async throws {
        let capture = LogRedactionTests.Capture()
        try await ServerHarness.run(logger: capture.logger(level: .info)) { harness in
            let credential = try await harness.appleCredential("ided@example.com")
            let response = try await harness.server.execute(
                uri: "/auth/apple/native",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(
                    bytes: try JSONSerialization.data(withJSONObject: [
                        "identityToken": credential["identityToken"] as? String ?? ""
                    ])
                )
            )
            #expect(response.status == .ok)
            let id = try #require(response.headers[Self.requestID])
            #expect(id.wholeMatch(of: /[A-Za-z0-9_-]{11}/) != nil, "a new id: \(id)")
            let lines = try Self.lines(capture)
            let signedIn = try #require(lines.first { $0["message"] == "signed in" }, "\(lines)")
            #expect(signedIn["request_id"] == id)
            #expect(lines.first { $0["message"] == "request" }?["request_id"] == id)
            // Lines logged outside any request carry none.
            #expect(lines.filter { $0["request_id"] != nil }.allSatisfy { $0["request_id"] == id })
        }
    }

    /// The provider is set on the handler itself (swift-log's default setter would drop it with a warning).
    @Test func theRequestIDProviderReachesTheHandler() {
        let logger = Logger(label: "siwa") { StreamLogHandler.standardError(label: $0) }.addingSiwaRequestID()
        #expect(logger.metadataProvider != nil)
        #expect(logger.metadataProvider?.get().isEmpty == true, "no id outside a request")
    }

    /// A trusted proxy's `X-Request-Id` is the request's id (nginx's `$request_id`, say); anyone else's is not taken,
    /// nor a proxy's that could break a line.
    @Test(arguments: [true, false])
    func aTrustedProxysRequestIDIsTakenAndNoOneElses(peerIsTrusted: Bool) async throws {
        let capture = LogRedactionTests.Capture()
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.trustedProxies = try TrustedProxies([peerIsTrusted ? "127.0.0.1" : "127.0.0.2"])
        try await ServerHarness.run(configuration: configuration, logger: capture.logger(level: .info)) { harness in
            let given = "0123456789abcdef0123456789abcdef"
            let answered = try await harness.server.execute(
                uri: "/healthz",
                method: .get,
                headers: [Self.requestID: given]
            ).headers[Self.requestID]
            #expect((answered == given) == peerIsTrusted, "\(answered ?? "none")")
            for unsafe in ["a b", String(repeating: "x", count: 65), "id\"quoted", "é"] {
                let other = try await harness.server.execute(
                    uri: "/healthz",
                    method: .get,
                    headers: [Self.requestID: unsafe]
                ).headers[Self.requestID]
                #expect(other != unsafe && other?.utf8.count == 11, "\(unsafe) was taken")
            }
            let lines = try Self.lines(capture).filter { $0["message"] == "request" }
            #expect(lines.contains { $0["request_id"] == given } == peerIsTrusted)
        }
    }
}
