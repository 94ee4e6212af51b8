import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// Rules every route keeps, whatever its contract: one reading of a body, the size limit's status on browser routes,
/// `nosniff` on every answer, and the flow cookie's name and attributes on https.
@Suite("Server: input rules on every contract")
struct InputRulesTests {
    /// Every contract on, no rate limit.
    static func configuration() -> AuthServerConfiguration { CompatibilityTests.configuration() }

    private static func send(
        _ harness: ServerHarness,
        _ method: HTTPRequest.Method,
        _ path: String,
        body: String? = nil,
        contentType: String = "application/json",
        headers: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, text: String, headers: HTTPFields) {
        var fields = headers
        if body != nil { fields[.contentType] = contentType }
        let response = try await harness.server.execute(
            uri: path,
            method: method,
            headers: fields,
            body: body.map { ByteBuffer(string: $0) }
        )
        return (response.status, String(buffer: response.body), response.headers)
    }

    @Test func serviceStackBodiesAreReadOneWayOnly() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("twice@example.com")
            let token = try #require(credential["identityToken"] as? String)
            let duplicated = #"{"provider":"apple","accessToken":"\#(token)","accessToken":"x"}"#
            let json = try await Self.send(harness, .post, "/api/Authenticate", body: duplicated)
            #expect(json.status == .badRequest)
            #expect(json.text.contains("duplicate key"))
            // ServiceStack binds names case-insensitively: two spellings of one field are a duplicate too.
            let spellings = #"{"provider":"apple","accessToken":"\#(token)","AccessToken":"x"}"#
            #expect(try await Self.send(harness, .post, "/api/Authenticate", body: spellings).status == .badRequest)
            let form = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: "provider=apple&accessToken=\(token)&access_token=x",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(form.status == .badRequest)
            #expect(form.text.contains("DuplicateField"))
            #expect(try await harness.store.users(limit: 10, after: nil).isEmpty, "nobody was signed in")
        }
    }

    @Test func everyAnswerCarriesNoSniff() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let answers = [
                try await Self.send(harness, .get, "/healthz"),
                try await Self.send(harness, .get, "/.well-known/jwks.json"),
                try await Self.send(harness, .get, "/api/me"),
                try await Self.send(harness, .post, "/auth/refresh", body: "{}"),
                try await Self.send(harness, .get, "/auth"),
            ]
            for answer in answers {
                #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(answer.status)")
            }
        }
    }

    @Test func anOversizedWebCallbackIs413OnEveryContract() async throws {
        try await ServerHarness.run(configuration: Self.configuration(), web: true) { harness in
            let huge = "state=s&code=c&id_token=" + String(repeating: "a", count: 300_000)
            for path in ["/auth/apple/callback", "/web/auth/siwa/callback"] {
                let answer = try await harness.browser(.post, path, body: huge)
                #expect(answer.status == .contentTooLarge, "\(path)")
                #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true, "\(path): a page")
            }
        }
    }

    @Test func onHTTPSTheFlowCookieIsAHostCookie() async throws {
        var configuration = Self.configuration()
        configuration.publicURL = "https://auth.example.com"
        try await ServerHarness.run(configuration: configuration) { harness in
            let start = try await Self.send(harness, .get, "/auth/apple/authorize")
            #expect(start.status == .found)
            let cookie = try #require(start.headers[values: .setCookie].first { $0.hasPrefix("__Host-siwa_flow=") })
            for attribute in ["Secure", "HttpOnly", "SameSite=None", "Path=/"] {
                #expect(cookie.contains(attribute), "\(attribute) in \(cookie)")
            }
            #expect(!cookie.contains("Domain="), "a __Host- cookie names no domain")
        }
    }

    @Test func aTrailingSlashDoesNotEscapeTheFlowBudget() async throws {
        var configuration = Self.configuration()
        configuration.authRateLimit = .init(requestsPerSecond: 1000, burst: 1000)
        configuration.maximumFlowsPerClient = 2
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            for _ in 0..<2 {
                let started = try await harness.browser(.get, "/auth/apple/authorize")
                #expect(started.status == .found)
            }
            for path in ["/auth/apple/authorize/", "//auth/apple/authorize", "/auth//apple/authorize"] {
                let refused = try await harness.browser(.get, path)
                #expect(refused.status == .tooManyRequests, "\(path)")
            }
        }
    }
}
