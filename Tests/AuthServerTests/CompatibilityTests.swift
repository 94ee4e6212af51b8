import AccountStore
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// The tutorials' client contracts, driven with the requests their client code sends, against the emulator.
@Suite("Server: compatibility contracts")
struct CompatibilityTests {
    static func configuration(admins: Set<String> = []) -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.compatibility = .all
        configuration.compatibility.adminUsers = admins
        return configuration
    }

    /// Sends a raw request and decodes a JSON object answer.
    static func send(
        _ harness: ServerHarness,
        _ method: HTTPRequest.Method,
        _ path: String,
        body: String? = nil,
        contentType: String = "application/json",
        headers extra: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields, text: String) {
        var headers = extra
        if body != nil { headers[.contentType] = contentType }
        let response = try await harness.server.execute(
            uri: path,
            method: method,
            headers: headers,
            body: body.map { ByteBuffer(string: $0) }
        )
        let text = String(buffer: response.body)
        let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        return (response.status, json, response.headers, text)
    }

    static func jsonText(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func cookies(_ headers: HTTPFields) -> [String: String] {
        var found: [String: String] = [:]
        for value in headers[values: .setCookie] {
            let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2 { found[String(pair[0])] = String(pair[1]) }
        }
        return found
    }

    // MARK: ServiceStack

    @Test func serviceStackAuthenticateWithMetaRefreshAndHelloSecure() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("ss@example.com", givenName: "Sam")
            let identityToken = try #require(credential["identityToken"] as? String)
            let code = try #require(credential["authorizationCode"] as? String)
            // The Flutter and SwiftUI samples: `Authenticate(provider: "apple", accessToken:, meta: {...})`.
            let body = try Self.jsonText([
                "provider": "apple", "accessToken": identityToken,
                "meta": ["authorizationCode": code, "givenName": "Sam", "familyName": "Appleseed"],
            ])
            let signIn = try await Self.send(harness, .post, "/api/Authenticate", body: body)
            #expect(signIn.status == .ok)
            let userID = try #require(signIn.json["userId"] as? String)
            #expect(UserID(userID) != nil)
            #expect(signIn.json["userName"] as? String == "ss@example.com")
            #expect(signIn.json["displayName"] as? String == "Sam Appleseed")
            #expect((signIn.json["sessionId"] as? String).flatMap(SessionID.init) != nil)
            #expect((signIn.json["profileUrl"] as? String)?.hasPrefix("data:image/svg+xml") == true)
            #expect(signIn.json["roles"] as? [String] == [])
            #expect(signIn.json["permissions"] as? [String] == [])
            let bearer = try #require(signIn.json["bearerToken"] as? String)
            let refresh = try #require(signIn.json["refreshToken"] as? String)
            #expect(try await harness.store.appleToken(userID: UserID(userID)!) != nil, "the code was exchanged")

            let hello = try await Self.send(
                harness,
                .get,
                "/hello/secure/World",
                headers: [.authorization: "Bearer \(bearer)"]
            )
            #expect(hello.json["result"] as? String == "Secure World!")
            let query = try await Self.send(
                harness,
                .get,
                "/api/HelloSecure?name=Sam",
                headers: [.authorization: "Bearer \(bearer)"]
            )
            #expect(query.json["result"] as? String == "Secure Sam!")
            // A POST's body is read even when the query names someone: one that is not a JSON object is refused.
            let array = try await Self.send(
                harness,
                .post,
                "/api/HelloSecure?name=Sam",
                body: "[null, null]",
                headers: [.authorization: "Bearer \(bearer)"]
            )
            #expect(array.status == .badRequest)
            #expect((array.json["responseStatus"] as? [String: Any])?["errorCode"] as? String == "ArgumentException")
            let posted = try await Self.send(
                harness,
                .post,
                "/api/HelloSecure?name=Sam",
                body: #"{"name": "Kim"}"#,
                headers: [.authorization: "Bearer \(bearer)"]
            )
            #expect(posted.json["result"] as? String == "Secure Sam!", "the query's name wins")
            let anonymous = try await Self.send(harness, .get, "/hello/secure/World")
            #expect(anonymous.status == .unauthorized)
            let status = try #require(anonymous.json["responseStatus"] as? [String: Any])
            #expect(status["errorCode"] as? String == "Unauthorized")

            // `GetAccessToken` keeps the refresh token: ServiceStack's clients present it again and again.
            for _ in 0..<2 {
                let renewed = try await Self.send(
                    harness,
                    .post,
                    "/api/GetAccessToken",
                    body: try Self.jsonText(["refreshToken": refresh])
                )
                #expect(renewed.status == .ok)
                let access = try #require(renewed.json["accessToken"] as? String)
                let me = try await harness.call(.get, "/api/me", bearer: access)
                #expect(me.json.string("id") == userID)
            }

            // `Authenticate` with no provider: the current session, or ServiceStack's 401.
            let current = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: "{}",
                headers: [.authorization: "Bearer \(bearer)"]
            )
            #expect(current.status == .ok)
            #expect(current.json["userId"] as? String == userID)
            #expect(current.json["sessionId"] as? String == signIn.json["sessionId"] as? String)
            let none = try await Self.send(harness, .post, "/api/Authenticate", body: "{}")
            #expect(none.status == .unauthorized)
            #expect(
                none.json["responseStatus"] as? [String: String]
                    == ["errorCode": "Unauthorized", "message": "Not Authenticated"]
            )
        }
    }

    @Test func serviceStackAcceptsTopLevelFieldsFormsAndEveryRoute() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            for (index, path) in ["/auth/apple", "/auth", "/json/reply/Authenticate"].enumerated() {
                let credential = try await harness.appleCredential("route\(index)@example.com")
                let token = try #require(credential["identityToken"] as? String)
                let json = try await Self.send(
                    harness,
                    .post,
                    path,
                    body: try Self.jsonText([
                        "provider": "apple", "accessToken": token,
                        "authorizationCode": credential["authorizationCode"] as? String ?? "",
                    ])
                )
                #expect(json.status == .ok, "\(path)")
                #expect(json.json["bearerToken"] is String, "\(path)")
            }
            let credential = try await harness.appleCredential("form@example.com", givenName: "Fo")
            let token = try #require(credential["identityToken"] as? String)
            let form = try await Self.send(
                harness,
                .post,
                "/auth/apple",
                body: "provider=apple&AccessToken=\(token)&givenName=Fo&familyName=Rm",
                contentType: "application/x-www-form-urlencoded"
            )
            #expect(form.status == .ok)
            #expect(form.json["displayName"] as? String == "Fo Rm")
        }
    }

    @Test func serviceStackTokenCookiesAndErrors() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("cookie@example.com")
            let token = try #require(credential["identityToken"] as? String)
            let signIn = try await Self.send(
                harness,
                .post,
                "/auth/apple",
                body: try Self.jsonText(["provider": "apple", "accessToken": token, "useTokenCookie": true])
            )
            let cookies = Self.cookies(signIn.headers)
            let ssTok = try #require(cookies["ss-tok"])
            let ssRefTok = try #require(cookies["ss-reftok"])
            #expect(ssTok == signIn.json["bearerToken"] as? String)
            #expect(signIn.headers[values: .setCookie].allSatisfy { $0.contains("HttpOnly") })

            let byCookie = try await Self.send(
                harness,
                .get,
                "/hello/secure?name=Cookie",
                headers: [.cookie: "ss-tok=\(ssTok)"]
            )
            #expect(byCookie.json["result"] as? String == "Secure Cookie!")
            // "Who am I": ServiceStack's clients send no Origin, and the call changes nothing.
            let whoAmI = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: "{}",
                headers: [.cookie: "ss-tok=\(ssTok)"]
            )
            #expect(whoAmI.status == .ok, "\(whoAmI.json)")
            #expect(whoAmI.json["bearerToken"] == nil, "a cookie's token is not answered to page scripts")
            // Signing out with the cookie still must come from this site.
            let crossSiteLogout = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: #"{"provider":"logout"}"#,
                headers: [.cookie: "ss-tok=\(ssTok)", .origin: "https://evil.example"]
            )
            #expect(crossSiteLogout.status == .forbidden)
            let stillSignedIn = try await Self.send(
                harness,
                .get,
                "/hello/secure",
                headers: [.cookie: "ss-tok=\(ssTok)"]
            )
            #expect(stillSignedIn.status == .ok, "a cross-site sign-out ended the session")
            let renewed = try await Self.send(
                harness,
                .post,
                "/access-token",
                body: "",
                headers: [.cookie: "ss-reftok=\(ssRefTok)"]
            )
            #expect(renewed.status == .ok)
            #expect(Self.cookies(renewed.headers)["ss-tok"] == renewed.json["accessToken"] as? String)

            let missing = try await Self.send(harness, .post, "/api/Authenticate", body: #"{"provider":"apple"}"#)
            #expect(missing.status == .badRequest)
            let status = try #require(missing.json["responseStatus"] as? [String: Any])
            let errors = try #require(status["errors"] as? [[String: String]])
            #expect(errors.first?["fieldName"] == "AccessToken")
            #expect(errors.first?["errorCode"] == "NotEmpty")

            let forged = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: try Self.jsonText(["provider": "apple", "accessToken": "a.b.c"])
            )
            #expect(forged.status == .unauthorized)
            let forgedStatus = try #require(forged.json["responseStatus"] as? [String: Any])
            #expect(forgedStatus["errorCode"] as? String == "Unauthorized")
            #expect((forgedStatus["message"] as? String)?.isEmpty == false)
        }
    }

    /// ServiceStack signs out by GET (`/auth/logout`, `/auth?provider=logout`), and the cookies are `SameSite=Lax`:
    /// a link or a redirect on another site's page would send them. A GET the browser marks as another site's, or that
    /// names another origin, signs nobody out; ServiceStack's own clients, which send none of those, and this site's
    /// pages do.
    @Test func aSignOutByGetFromAnotherSiteEndsNothing() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            func signedIn(_ email: String) async throws -> String {
                let credential = try await harness.appleCredential(email)
                let token = try #require(credential["identityToken"] as? String)
                let signIn = try await Self.send(
                    harness,
                    .post,
                    "/auth/apple",
                    body: try Self.jsonText(["provider": "apple", "accessToken": token, "useTokenCookie": true])
                )
                return try #require(Self.cookies(signIn.headers)["ss-tok"])
            }
            func works(_ ssTok: String) async throws -> Bool {
                try await Self.send(harness, .get, "/hello/secure", headers: [.cookie: "ss-tok=\(ssTok)"]).status == .ok
            }
            let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
            let publicURL = Self.configuration().publicURL
            for path in ["/auth/logout", "/auth?provider=logout", "/api/Authenticate?provider=logout"] {
                let ssTok = try await signedIn("get-logout@example.com")
                let attacks: [HTTPFields] = [
                    [.cookie: "ss-tok=\(ssTok)", secFetchSite: "cross-site"],
                    [.cookie: "ss-tok=\(ssTok)", secFetchSite: "same-site"],
                    [.cookie: "ss-tok=\(ssTok)", secFetchSite: "cross-site", .referer: "https://evil.example/page"],
                    [.cookie: "ss-tok=\(ssTok)", .referer: "https://evil.example/page"],
                    [.cookie: "ss-tok=\(ssTok)", .origin: "https://evil.example"],
                ]
                for headers in attacks {
                    let refused = try await Self.send(harness, .get, path, headers: headers)
                    #expect(refused.status == .forbidden, "\(path) \(headers): \(refused.json)")
                    #expect(try await works(ssTok), "GET \(path) from another site ended the session: \(headers)")
                }
                let fromThisSite = try await Self.send(
                    harness,
                    .get,
                    path,
                    headers: [
                        .cookie: "ss-tok=\(ssTok)", secFetchSite: "same-origin", .referer: publicURL + "/account",
                    ]
                )
                #expect(fromThisSite.status == .ok, "\(path): \(fromThisSite.json)")
                #expect(try await works(ssTok) == false, "GET \(path) from this site signs out")

                let client = try await signedIn("get-logout-client@example.com")
                let byClient = try await Self.send(harness, .get, path, headers: [.cookie: "ss-tok=\(client)"])
                #expect(byClient.status == .ok, "ServiceStack's client names no origin: \(byClient.json)")
                #expect(try await works(client) == false, "GET \(path) by ServiceStack's client signs out")
            }
        }
    }

    /// Tokens and ids carried from one server to the next one on the same store.
    final class Carried: @unchecked Sendable {
        // Written by the first server's run, read by the second's, which starts after the first has finished.
        var plain = ""
        var admin = ""
        var adminAppleUserID = ""
    }

    @Test func serviceStackUsersDumpIsForAdminsOnly() async throws {
        // The admin is named by their Apple user id, which exists only after the first sign-in: sign in on a first
        // server, then run a second one on the same store with the role granted.
        let store = InMemoryAccountStore()
        let dataKey = SymmetricKey(size: .bits256)
        let carried = Carried()
        @Sendable func signIn(
            _ harness: ServerHarness,
            _ email: String
        ) async throws -> (bearer: String, appleUserID: String) {
            let credential = try await harness.appleCredential(email)
            let answer = try await Self.send(
                harness,
                .post,
                "/api/Authenticate",
                body: try Self.jsonText([
                    "provider": "apple", "accessToken": credential["identityToken"] as? String ?? "",
                ])
            )
            return (try #require(answer.json["bearerToken"] as? String), try #require(credential["user"] as? String))
        }
        try await ServerHarness.run(store: store, configuration: Self.configuration(), dataKey: dataKey) { harness in
            carried.plain = try await signIn(harness, "plain@example.com").bearer
            let admin = try await signIn(harness, "admin@example.com")
            (carried.admin, carried.adminAppleUserID) = (admin.bearer, admin.appleUserID)
        }
        try await ServerHarness.run(
            store: store,
            configuration: Self.configuration(admins: [carried.adminAppleUserID.lowercased()]),
            dataKey: dataKey
        ) { harness in
            for bearer in [carried.plain] {
                let refused = try await Self.send(
                    harness,
                    .get,
                    "/users",
                    headers: [.authorization: "Bearer \(bearer)"]
                )
                #expect(refused.status == .forbidden)
                #expect((refused.json["responseStatus"] as? [String: Any])?["message"] as? String == "Invalid Role")
            }
            #expect(try await Self.send(harness, .get, "/users").status == .unauthorized)
            let dump = try await Self.send(
                harness,
                .get,
                "/users",
                headers: [.authorization: "Bearer \(carried.admin)"]
            )
            #expect(dump.status == .ok)
            let results = try #require(dump.json["results"] as? [[String: Any]])
            let adminRow = try #require(results.first { $0["email"] as? String == "admin@example.com" })
            #expect(adminRow["roles"] as? [String] == ["Admin"])
            #expect(results.filter { ($0["roles"] as? [String]) == ["Admin"] }.count == 1, "one admin, by Apple id")
            let apple = try #require((adminRow["providerOAuthAccess"] as? [[String: Any]])?.first)
            #expect(apple["provider"] as? String == "apple")
            #expect(apple["userId"] as? String == carried.adminAppleUserID)
            #expect(dump.json["total"] as? Int == 2)

            // A page at a time: `take` and the previous page's `next`; never every account in one answer.
            var seen: [String] = []
            var path = "/users?take=1"
            while true {
                let page = try await Self.send(
                    harness,
                    .get,
                    path,
                    headers: [.authorization: "Bearer \(carried.admin)"]
                )
                #expect(page.status == .ok)
                let rows = try #require(page.json["results"] as? [[String: Any]])
                #expect(rows.count <= 1)
                #expect(page.json["total"] as? Int == 2)
                seen += rows.compactMap { $0["email"] as? String }
                guard let next = page.json["next"] as? String else { break }
                path = "/users?take=1&after=\(next)"
            }
            #expect(seen.sorted() == ["admin@example.com", "plain@example.com"], "every account, each once")
            let badTake = try await Self.send(
                harness,
                .get,
                "/users?take=100000",
                headers: [.authorization: "Bearer \(carried.admin)"]
            )
            #expect(badTake.status == .badRequest)
        }
    }

    // MARK: The Vapor tutorial

    @Test func vaporTutorialSignInAndMe() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("vapor@example.com")
            let token = try #require(credential["identityToken"] as? String)
            // `SIWAAPIController`'s request body.
            let signIn = try await Self.send(
                harness,
                .post,
                "/api/auth/siwa",
                body: try Self.jsonText(["appleIdentityToken": token, "firstName": "Tim", "lastName": "Cook"])
            )
            #expect(signIn.status == .ok)
            #expect(signIn.headers[.contentType] == "application/json; charset=utf-8")
            #expect(signIn.headers[.cacheControl] == "no-store")
            #expect(Set(signIn.json.keys) == ["accessToken", "user"])
            let accessToken = try #require(signIn.json["accessToken"] as? String)
            #expect(accessToken.hasPrefix("vt."), "the tutorial's bearer is the contract's refresh token")
            let user = try #require(signIn.json["user"] as? [String: Any])
            #expect(user["email"] as? String == "vapor@example.com")
            #expect(user["firstName"] as? String == "Tim")
            #expect(user["lastName"] as? String == "Cook")

            // The tutorial's token is long-lived: it still works after siwa's access tokens would have expired.
            harness.clock.advance(by: 3_600)
            let me = try await Self.send(
                harness,
                .get,
                "/api/users/me",
                headers: [.authorization: "Bearer \(accessToken)"]
            )
            #expect(me.status == .ok)
            #expect(me.headers[.cacheControl] == "no-store")
            #expect(me.json["id"] as? String == user["id"] as? String)
            #expect(me.json["firstName"] as? String == "Tim")

            // Logging out with it ends it at once.
            let logout = try await harness.call(.post, "/auth/logout", json: ["refreshToken": accessToken])
            #expect(logout.status == .noContent)
            let after = try await Self.send(
                harness,
                .get,
                "/api/users/me",
                headers: [.authorization: "Bearer \(accessToken)"]
            )
            #expect(after.status == .unauthorized)
            #expect(after.json["error"] as? Bool == true)
            #expect(after.json["reason"] is String)

            let bad = try await Self.send(harness, .post, "/api/auth/siwa", body: #"{"firstName":"x"}"#)
            #expect(bad.status == .badRequest)
            #expect((bad.json["reason"] as? String)?.contains("appleIdentityToken") == true)
        }
    }

    // MARK: RentManager

    @Test func rentManagerSignInAndRefreshWithoutRotation() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let credential = try await harness.appleCredential("rent@example.com")
            let token = try #require(credential["identityToken"] as? String)
            let signIn = try await Self.send(
                harness,
                .post,
                "/api/auth/apple",
                body: try Self.jsonText([
                    "identityToken": token, "user": ["name": ["firstName": "Rita", "lastName": "Renter"]],
                ])
            )
            #expect(signIn.status == .ok)
            #expect(signIn.json["success"] as? Bool == true)
            #expect(signIn.json["isNewUser"] as? Bool == true)
            let user = try #require(signIn.json["user"] as? [String: Any])
            #expect(user["full_name"] as? String == "Rita Renter")
            #expect(user["email"] as? String == "rent@example.com")
            #expect(user["role"] as? String == "user")
            #expect(user["access_level"] as? String == "standard")
            let refresh = try #require(signIn.json["refreshToken"] as? String)
            for _ in 0..<3 {
                let renewed = try await Self.send(
                    harness,
                    .post,
                    "/api/auth/refresh",
                    body: try Self.jsonText(["refreshToken": refresh])
                )
                #expect(renewed.status == .ok)
                let access = try #require(renewed.json["token"] as? String)
                #expect(try await harness.call(.get, "/api/me", bearer: access).status == .ok)
            }
            let bad = try await Self.send(
                harness,
                .post,
                "/api/auth/refresh",
                body: try Self.jsonText(["refreshToken": "nope"])
            )
            #expect(bad.status == .unauthorized)
            #expect(bad.json["success"] as? Bool == false)
            #expect(bad.json["error"] as? String == "invalid_refresh_token")
            #expect(bad.json["message"] is String)
        }
    }

    @Test func contractsAreOffUnlessConfigured() async throws {
        try await ServerHarness.run { harness in
            for (method, path) in [
                (HTTPRequest.Method.post, "/api/Authenticate"), (.post, "/api/auth/siwa"), (.post, "/api/auth/apple"),
                (.get, "/hello/secure"), (.get, "/users"),
            ] {
                let answer = try await Self.send(harness, method, path, body: "{}")
                #expect(answer.status == .notFound, "\(path)")
            }
        }
    }
}

/// The contracts' web flows: ServiceStack's `GET /auth/apple?ReturnUrl=` with Apple's `form_post` back to
/// `/auth/apple`, and the Vapor tutorial's `/web/auth/siwa/sign-in` and `/callback`.
@Suite("Server: compatibility web flows")
struct CompatibilityWebTests {
    @Test func serviceStackWebFlowAndAndroidReturn() async throws {
        try await ServerHarness.run(configuration: configuration(), web: true) { harness in
            let start = try await harness.browser(.get, "/auth/apple?ReturnUrl=%2Fhello%2Fsecure%2FNewcomer")
            #expect(start.status == .found)
            let location = try #require(start.location)
            #expect(ServerHarness.query(of: location)["redirect_uri"] == harness.serverURL + "/auth/apple")
            let post = try await harness.consent(at: location, email: "ssweb@example.com", givenName: "Web")
            #expect(post.action == harness.serverURL + "/auth/apple")
            let done = try await harness.browser(.post, "/auth/apple", form: post.fields)
            #expect(done.status == .seeOther, "\(done.body)")
            #expect(done.location == "/hello/secure/Newcomer")
            let session = try #require(done.cookie("siwa_session"))
            let me = try await harness.call(.get, "/api/me", bearer: session)
            #expect(me.json.string("givenName") == "Web")
            // The browser follows the redirect with the cookies it was given and lands signed in on ServiceStack's
            // own route, as the sample's web page expects.
            let landed = try await harness.browser(
                .get,
                try #require(done.location),
                cookies: ["siwa_session": session]
            )
            #expect(landed.status == .ok, "\(landed.body)")
            #expect(landed.body.contains("Secure Newcomer!"))

            // `ReturnUrl=android:<package>` (FlutterSignInWithApple): Apple's answer goes to the app's intent.
            let android = try await harness.browser(.get, "/auth/apple?ReturnUrl=android:com.example.flutter")
            #expect(android.status == .found, "\(android.body)")
            let androidPost = try await harness.consent(
                at: try #require(android.location),
                email: "ssweb@example.com"
            )
            let intent = try await harness.browser(.post, "/auth/apple", form: androidPost.fields)
            let intentURL = try #require(intent.location)
            #expect(intentURL.hasPrefix("intent://callback?"))
            #expect(intentURL.hasSuffix("#Intent;package=com.example.flutter;scheme=signinwithapple;end"))
            #expect(intentURL.contains("id_token="))

            let refused = try await harness.browser(.get, "/auth/apple?ReturnUrl=https%3A%2F%2Fevil.example")
            #expect(refused.status == .badRequest)
            #expect(refused.body.contains("responseStatus"))
        }
    }

    @Test func vaporTutorialWebFlow() async throws {
        try await ServerHarness.run(configuration: configuration(), web: true) { harness in
            let page = try await harness.browser(.get, "/web/auth/siwa/sign-in")
            #expect(page.status == .ok)
            #expect(page.body.contains("/web/auth/siwa/authorize?returnUrl="))
            let start = try await harness.browser(.get, "/web/auth/siwa/authorize")
            let location = try #require(start.location)
            #expect(ServerHarness.query(of: location)["redirect_uri"] == harness.serverURL + "/web/auth/siwa/callback")
            let post = try await harness.consent(at: location, email: "vaporweb@example.com", givenName: "Leaf")
            let done = try await harness.browser(.post, "/web/auth/siwa/callback", form: post.fields)
            #expect(done.status == .seeOther, "\(done.body)")
            #expect(done.location == "/web/auth/siwa/sign-in")
            let session = try #require(done.cookie("siwa_session"))
            let signedIn = try await harness.browser(
                .get,
                "/web/auth/siwa/sign-in",
                headers: [.cookie: "siwa_session=\(session)"]
            )
            #expect(signedIn.body.contains("Leaf"))
            #expect(signedIn.body.contains("vaporweb@example.com"))

            // A replayed post changes nothing and shows an error page.
            let replay = try await harness.browser(.post, "/web/auth/siwa/callback", form: post.fields)
            #expect(replay.status == .badRequest)
            #expect(replay.body.contains("state_already_used"))
        }
    }

    func configuration() -> AuthServerConfiguration {
        var configuration = CompatibilityTests.configuration()
        configuration.web.allowedAndroidPackages = ["com.example.flutter"]
        return configuration
    }
}
