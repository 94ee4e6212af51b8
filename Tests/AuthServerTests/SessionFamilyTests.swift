import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// One refresh-token family per session, whatever route presents it; sign-out on every contract; two tabs that
/// refresh at once; JSON bodies read one way only.
@Suite("Server: session families across contracts")
struct SessionFamilyTests {
    /// Every contract on, no rate limit.
    static func configuration() -> AuthServerConfiguration { CompatibilityTests.configuration() }

    private static func send(
        _ harness: ServerHarness,
        _ method: HTTPRequest.Method,
        _ path: String,
        json: [String: Any]? = nil,
        headers: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        var fields = headers
        var body: ByteBuffer?
        if let json {
            fields[.contentType] = "application/json"
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        }
        let response = try await harness.server.execute(uri: path, method: method, headers: fields, body: body)
        let object =
            (try? JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8))) as? [String: Any] ?? [:]
        return (response.status, object, response.headers)
    }

    /// Signs in on ServiceStack's `Authenticate`; answers its bearer and refresh token.
    private static func serviceStackSignIn(
        _ harness: ServerHarness,
        email: String,
        extra: [String: Any] = [:],
        headers: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields) {
        let credential = try await harness.appleCredential(email)
        let identityToken = try #require(credential["identityToken"] as? String)
        return try await send(
            harness,
            .post,
            "/api/Authenticate",
            json: ["provider": "apple", "accessToken": identityToken].merging(extra) { $1 },
            headers: headers
        )
    }

    private static func errorCode(_ json: [String: Any]) -> String? {
        json["error"] as? String
            ?? ((json["responseStatus"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["errorCode"]
            as? String
    }

    // MARK: A refresh token works on its own contract only

    @Test func aServiceStackRefreshTokenCannotBeRotatedOnTheCanonicalRoute() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let signIn = try await Self.serviceStackSignIn(harness, email: "ss-thief@example.com")
            let refresh = try #require(signIn.json["refreshToken"] as? String)

            // The thief's move: rotate the stolen, non-rotating token on siwa's own route.
            let stolen = try await Self.send(harness, .post, "/auth/refresh", json: ["refreshToken": refresh])
            #expect(stolen.status == .unauthorized)
            #expect(stolen.json["error"] as? String == "invalid_refresh_token")
            #expect((stolen.json["message"] as? String)?.contains("ServiceStack") == true)

            // The real client keeps working, on its own route.
            let access = try await Self.send(harness, .post, "/api/GetAccessToken", json: ["refreshToken": refresh])
            #expect(access.status == .ok)
            #expect(access.json["accessToken"] is String)
        }
    }

    @Test func aNativeRefreshTokenIsRefusedByEveryCompatibilityContract() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let native = try await harness.signIn("native-elsewhere@example.com")
            let refresh = try #require(native.json.string("refreshToken"))

            let getAccessToken = try await Self.send(
                harness,
                .post,
                "/api/GetAccessToken",
                json: ["refreshToken": refresh]
            )
            #expect(getAccessToken.status == .unauthorized)
            let rentManager = try await Self.send(harness, .post, "/api/auth/refresh", json: ["refreshToken": refresh])
            #expect(rentManager.status == .unauthorized)
            #expect(rentManager.json["error"] as? String == "invalid_refresh_token")
            let vapor = try await Self.send(
                harness,
                .get,
                "/api/users/me",
                headers: [.authorization: "Bearer \(refresh)"]
            )
            #expect(vapor.status == .unauthorized)

            // Refusing it on the wrong route ended nothing: it still rotates where it belongs.
            let rotated = try await Self.send(harness, .post, "/auth/refresh", json: ["refreshToken": refresh])
            #expect(rotated.status == .ok)
        }
    }

    @Test func aRotatedTokenPresentedOnAnyRouteRevokesItsSession() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let native = try await harness.signIn("rotated-anywhere@example.com")
            let old = try #require(native.json.string("refreshToken"))
            let rotated = try await Self.send(harness, .post, "/auth/refresh", json: ["refreshToken": old])
            let current = try #require(rotated.json["refreshToken"] as? String)

            // Past the grace window, the old token shows up on a compatibility route: reuse.
            harness.clock.advance(by: 60)
            let reuse = try await Self.send(harness, .post, "/api/GetAccessToken", json: ["refreshToken": old])
            #expect(reuse.status == .unauthorized)
            #expect(Self.errorCode(reuse.json) == "RefreshTokenReused")

            let after = try await Self.send(harness, .post, "/auth/refresh", json: ["refreshToken": current])
            #expect(after.status == .unauthorized)
            #expect(after.json["error"] as? String == "refresh_token_revoked", "the whole session ended")
        }
    }

    // MARK: Sign-out on every contract

    @Test func serviceStackLogoutEndsTheSessionAndClearsItsCookies() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            for logout in ["GET /auth/logout", "POST /auth/logout", "Authenticate logout"] {
                let signIn = try await Self.serviceStackSignIn(
                    harness,
                    email: "ss-logout@example.com",
                    extra: ["useTokenCookie": true]
                )
                #expect(signIn.status == .ok)
                let bearer = try #require(signIn.json["bearerToken"] as? String)
                let refresh = try #require(signIn.json["refreshToken"] as? String)
                let cookie: HTTPFields = [.cookie: "ss-tok=\(bearer); ss-reftok=\(refresh)"]

                let answer: (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields)
                switch logout {
                case "GET /auth/logout":
                    answer = try await Self.send(harness, .get, "/auth/logout", headers: cookie)
                case "POST /auth/logout":
                    var headers = cookie
                    headers[.origin] = "http://localhost:8080"
                    answer = try await Self.send(harness, .post, "/auth/logout", headers: headers)
                default:
                    answer = try await Self.send(
                        harness,
                        .post,
                        "/api/Authenticate",
                        json: ["provider": "logout"],
                        headers: [.authorization: "Bearer \(bearer)"]
                    )
                }
                #expect(answer.status.code < 400, "\(logout)")
                if logout != "Authenticate logout" {
                    let cleared = answer.headers[values: .setCookie].filter { $0.contains("Max-Age=0") }
                    #expect(cleared.contains { $0.hasPrefix("ss-tok=") }, "\(logout) clears ss-tok")
                    #expect(cleared.contains { $0.hasPrefix("ss-reftok=") }, "\(logout) clears ss-reftok")
                }
                let hello = try await Self.send(
                    harness,
                    .get,
                    "/hello/secure/World",
                    headers: [.authorization: "Bearer \(bearer)"]
                )
                #expect(hello.status == .unauthorized, "\(logout): the bearer token is refused")
                let access = try await Self.send(harness, .post, "/api/GetAccessToken", json: ["refreshToken": refresh])
                #expect(access.status == .unauthorized, "\(logout): the refresh token is refused")
            }
        }
    }

    @Test func getAuthDoesNotEchoTheHttpOnlyTokenCookie() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let signIn = try await Self.serviceStackSignIn(harness, email: "ss-echo@example.com")
            let bearer = try #require(signIn.json["bearerToken"] as? String)
            let byCookie = try await Self.send(harness, .get, "/auth", headers: [.cookie: "ss-tok=\(bearer)"])
            #expect(byCookie.status == .ok)
            #expect(byCookie.json["userId"] as? String != nil)
            #expect(
                byCookie.json["bearerToken"] == nil,
                "a page script must not read the HttpOnly cookie through /auth"
            )
            let byHeader = try await Self.send(harness, .get, "/auth", headers: [.authorization: "Bearer \(bearer)"])
            #expect(byHeader.json["bearerToken"] as? String == bearer)
        }
    }

    @Test func aCrossSiteFormCannotPlantServiceStackCookies() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let foreign = try await Self.serviceStackSignIn(
                harness,
                email: "attacker@example.com",
                extra: ["useTokenCookie": true],
                headers: [.origin: "https://evil.example"]
            )
            #expect(foreign.status == .forbidden)
            #expect(foreign.headers[values: .setCookie].isEmpty, "no cookie is set")
            let own = try await Self.serviceStackSignIn(
                harness,
                email: "attacker@example.com",
                extra: ["useTokenCookie": true],
                headers: [.origin: "http://localhost:8080"]
            )
            #expect(own.status == .ok)
            #expect(own.headers[values: .setCookie].contains { $0.hasPrefix("ss-tok=") })
        }
    }

    // MARK: Two tabs

    @Test func twoTabsRenewingOneExpiredCookieAtOnceStaySignedIn() async throws {
        try await ServerHarness.run(configuration: Self.configuration(), web: true) { harness in
            let callback = try await harness.webSignIn(email: "two-tabs@example.com")
            let refresh = try #require(callback.cookie("siwa_refresh"))
            harness.clock.advance(by: 1_000)  // the access cookie has expired

            let pages = try await withThrowingTaskGroup(of: WebPage.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await harness.browser(.get, "/login", cookies: ["siwa_refresh": refresh])
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The family stays one chain: both tabs hold the same successor, not two siblings.
            let renewedTokens = Set(pages.compactMap { $0.cookie("siwa_refresh") })
            #expect(renewedTokens.count == 1, "the tabs got \(renewedTokens.count) different refresh tokens")
            for page in pages {
                #expect(page.status == .ok)
                #expect(page.body.contains("two-tabs@example.com"), "each tab shows the signed-in user")
                let renewed = try #require(page.cookie("siwa_refresh"))
                #expect(!renewed.isEmpty, "each tab gets a working refresh cookie, none is cleared")
                let next = try await Self.send(harness, .post, "/auth/refresh", json: ["refreshToken": renewed])
                #expect(next.status == .ok, "the renewed cookie of each tab still works")
            }
            #expect(try await harness.store.revokedSessions(since: .distantPast).isEmpty, "no session was revoked")

            // After the grace window the same old cookie is theft again.
            harness.clock.advance(by: 30)
            let late = try await harness.browser(.get, "/login", cookies: ["siwa_refresh": refresh])
            #expect(late.setCookies["siwa_refresh"]?.contains("Max-Age=0") == true, "the stale cookie is cleared")
            #expect(try await harness.store.revokedSessions(since: .distantPast).count == 1)
        }
    }

    // MARK: JSON bodies

    @Test func jsonRoutesRefuseOtherContentTypesAndDuplicateKeys() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("json-only@example.com")
            let identityToken = try #require(credential["identityToken"] as? String)
            let body = #"{"identityToken":"\#(identityToken)"}"#
            for contentType in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
                let response = try await harness.server.execute(
                    uri: "/auth/apple/native",
                    method: .post,
                    headers: [.contentType: contentType],
                    body: ByteBuffer(string: body)
                )
                #expect(response.status == .unsupportedMediaType, "\(contentType)")
                #expect(String(buffer: response.body).contains("unsupported_media_type"))
            }
            let duplicated = try await harness.server.execute(
                uri: "/auth/apple/native",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"identityToken":"\#(identityToken)","identityToken":"other"}"#)
            )
            #expect(duplicated.status == .badRequest)
            #expect(String(buffer: duplicated.body).contains("duplicate key"))
            #expect(try await harness.store.users(limit: 10, after: nil).isEmpty, "nothing was signed in")

            let charset = try await harness.server.execute(
                uri: "/auth/apple/native",
                method: .post,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ByteBuffer(string: body)
            )
            #expect(charset.status == .ok, "application/json with parameters is JSON")
        }
    }
}
