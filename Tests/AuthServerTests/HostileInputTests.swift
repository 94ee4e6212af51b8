import AccountStore
import AppleSignIn
import AppleSignInAsyncHTTPClient
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// Malformed and malicious requests against every canonical route and the compatibility routes: each answers a 4xx
/// with the JSON error (an HTML page on Apple's `form_post` callbacks, by design) and leaves the store as it was.
@Suite("Server: hostile input")
struct HostileInputTests {
    /// One hostile request and what kind of error answer it must get.
    struct HostileRequest: Sendable, CustomStringConvertible {
        enum Answer: Sendable {
            /// siwa's `{"error", "message"}`.
            case json
            /// A compatibility contract's own JSON error shape (ServiceStack's `responseStatus`, RentManager's
            /// `success: false`).
            case contractJSON
            /// Vapor's error middleware shape, which the Vapor tutorial's clients read: `{"error": true, "reason"}`.
            case vaporJSON
            /// The web flow's HTML error page.
            case html
            /// Refused by the HTTP parser before any route (a bare 400 and the connection closed); sent on a raw
            /// socket, as no HTTP client sends such a head.
            case parser
            /// Logout of an unknown refresh token: 204 and nothing changes, as RFC 7009 answers the revocation of an
            /// invalid token, so that logout is idempotent and no oracle of which tokens are live.
            case noContent
        }

        var name: String
        var method: HTTPRequest.Method
        var path: String
        var headers: HTTPFields = [:]
        var body: [UInt8]?
        var answer: Answer = .json

        var description: String { "\(name) (\(method) \(path))" }
    }

    /// What a signed-in user has, so that hostile requests have something to damage.
    struct Victim: Sendable {
        let sub: String
        let accessToken: String
        let refreshToken: String
        let serverKeyID: String
        let appleKeyID: String
    }

    @Test func hostileRequestsAnswer4xxAndChangeNothing() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.compatibility = .all
        try await ServerHarness.run(configuration: configuration) { harness in
            let victim = try await Self.signInVictim(harness)
            let requests = try Self.requests(victim: victim)
            #expect(requests.count >= 50)
            let before = try await Self.snapshot(harness.store)
            for request in requests {
                try await Self.check(request, harness: harness)
                let after = try await Self.snapshot(harness.store)
                #expect(after == before, "\(request) changed the store")
            }
            // The victim's session survived all of it.
            let refresh = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": victim.refreshToken])
            #expect(refresh.status == .ok)
        }
    }

    // MARK: - The table

    static func requests(victim: Victim) throws -> [HostileRequest] {
        let json: HTTPFields = [.contentType: "application/json"]
        let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        let foreign = try TestAppleKeys(count: 1)
        let now = Int(Date().timeIntervalSince1970)
        func appleSigned(header: String, claims: String) throws -> String {
            try foreign.sign(headerJSON: header, claimsJSON: claims)
        }
        func claims(exp: String = "\(now + 600)", iat: String = "\(now)") -> String {
            #"{"iss":"https://appleid.apple.com","aud":"\#(ServerHarness.bundleID)","exp":\#(exp),"iat":\#(iat),"#
                + #""sub":"\#(victim.sub)","nonce":"n"}"#
        }
        func unsigned(header: String, claims: String, signature: String = "") -> String {
            Base64URLText.encode(Array(header.utf8)) + "." + Base64URLText.encode(Array(claims.utf8)) + "." + signature
        }
        func native(_ name: String, _ body: String, headers: HTTPFields = json) -> HostileRequest {
            HostileRequest(
                name: name,
                method: .post,
                path: "/auth/apple/native",
                headers: headers,
                body: Array(body.utf8)
            )
        }
        func nativeToken(_ name: String, _ token: String) -> HostileRequest {
            native(name, #"{"identityToken":"\#(token)","authorizationCode":"c.0.x"}"#)
        }
        let rsHeader = #"{"kid":"\#(victim.appleKeyID)","alg":"RS256"}"#
        let megabyte = String(repeating: "A", count: 1 << 20)
        let deepArray = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let deepObject = String(repeating: #"{"a":"#, count: 5_000) + "1" + String(repeating: "}", count: 5_000)
        let invalidUTF8: [UInt8] = Array(#"{"identityToken":""#.utf8) + [0xC0, 0xAF, 0xFF, 0xFE] + Array(#""}"#.utf8)
        let accessClaims =
            #"{"iss":"http://localhost:8080","aud":"siwa","sub":"\#(victim.sub)","exp":\#(now + 600),"iat":\#(now)}"#
        let forgedES256: String = {
            let key = P256.Signing.PrivateKey()
            let input =
                Base64URLText.encode(Array(#"{"alg":"ES256","kid":"\#(victim.serverKeyID)","typ":"JWT"}"#.utf8)) + "."
                + Base64URLText.encode(Array(accessClaims.utf8))
            let signature = try! key.signature(for: Array(input.utf8)).rawRepresentation
            return input + "." + Base64URLText.encode(signature)
        }()
        let notificationClaims =
            #"{"iss":"https://appleid.apple.com","aud":"\#(ServerHarness.bundleID)","exp":\#(now + 600),"#
            + #""iat":\#(now),"jti":"hostile-1","events":"{\"type\":\"account-delete\",\"sub\":\"\#(victim.sub)\","#
            + #"\"event_time\":\#(now)000}"}"#
        func notification(_ name: String, _ body: [UInt8], headers: HTTPFields = json) -> HostileRequest {
            HostileRequest(name: name, method: .post, path: "/auth/apple/notifications", headers: headers, body: body)
        }
        func callback(_ name: String, _ body: String, path: String = "/auth/apple/callback") -> HostileRequest {
            HostileRequest(name: name, method: .post, path: path, headers: form, body: Array(body.utf8), answer: .html)
        }
        func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }
        let callbackToken = try appleSigned(header: rsHeader, claims: claims())

        var requests: [HostileRequest] = [
            // POST /auth/apple/native: bodies
            native("empty body", ""),
            native("not JSON", "hello"),
            native("JSON array", "[]"),
            native("JSON string", #""eyJ""#),
            native("missing identityToken", "{}"),
            native("identityToken is a number", #"{"identityToken":1e999}"#),
            native("identityToken is null", #"{"identityToken":null}"#),
            native("identityToken is an object", #"{"identityToken":{"$ne":""}}"#),
            native("deeply nested array", deepArray),
            native("deeply nested object", deepObject),
            native("deep nesting in an unknown field", #"{"identityToken":"a.b.c","x":\#(deepArray)}"#),
            HostileRequest(
                name: "invalid UTF-8",
                method: .post,
                path: "/auth/apple/native",
                headers: json,
                body: invalidUTF8
            ),
            native("duplicate identityToken keys", #"{"identityToken":"a.b.c","identityToken":"\#(callbackToken)"}"#),
            native(
                "body larger than the limit",
                #"{"identityToken":"a.b.c","pad":"\#(String(repeating: "x", count: 70_000))"}"#
            ),
            nativeToken("identity token of 1 MB", megabyte + "." + megabyte + ".AAAA"),
            native("text/plain garbage", "\u{0}\u{1}\u{2}", headers: [.contentType: "text/plain"]),
            native(
                "name of 60 KB with a bad token",
                #"{"identityToken":"a.b.c","givenName":"\#(String(repeating: "n", count: 60_000))"}"#
            ),
            // POST /auth/apple/native: tokens
            nativeToken("empty token", ""),
            nativeToken("two parts", "eyJhbGciOiJSUzI1NiJ9.e30"),
            nativeToken("four parts", "a.b.c.d"),
            nativeToken("not base64url", "!!!.###.$$$"),
            nativeToken("NUL in the token", #"a\u0000.b.c"#),
            nativeToken(
                "alg none",
                unsigned(header: #"{"alg":"none","kid":"\#(victim.appleKeyID)"}"#, claims: claims())
            ),
            nativeToken("alg None", unsigned(header: #"{"alg":"None"}"#, claims: claims())),
            nativeToken(
                "alg HS256 keyed with the public key",
                unsigned(
                    header: #"{"alg":"HS256","kid":"\#(victim.appleKeyID)"}"#,
                    claims: claims(),
                    signature: "c2lnbmF0dXJl"
                )
            ),
            nativeToken(
                "alg ES256",
                unsigned(header: #"{"alg":"ES256","kid":"\#(victim.appleKeyID)"}"#, claims: claims(), signature: "AAAA")
            ),
            nativeToken(
                "duplicate alg",
                unsigned(header: #"{"alg":"RS256","alg":"none"}"#, claims: claims(), signature: "AAAA")
            ),
            nativeToken(
                "crit header",
                try appleSigned(
                    header: #"{"alg":"RS256","kid":"\#(victim.appleKeyID)","crit":["exp"]}"#,
                    claims: claims()
                )
            ),
            nativeToken(
                "kid path traversal",
                try appleSigned(header: #"{"alg":"RS256","kid":"../../../../etc/passwd"}"#, claims: claims())
            ),
            nativeToken(
                "kid URL-encoded traversal",
                try appleSigned(header: #"{"alg":"RS256","kid":"..%2F..%2Fkeys%00"}"#, claims: claims())
            ),
            nativeToken(
                "kid of 10 KB",
                try appleSigned(
                    header: #"{"alg":"RS256","kid":"\#(String(repeating: "k", count: 10_000))"}"#,
                    claims: claims()
                )
            ),
            nativeToken(
                "jku and x5u headers",
                try appleSigned(
                    header:
                        #"{"alg":"RS256","kid":"\#(victim.appleKeyID)","jku":"http://127.0.0.1:1/keys","x5u":"http://127.0.0.1:1/c"}"#,
                    claims: claims()
                )
            ),
            nativeToken("Apple's kid, a foreign key", callbackToken),
            nativeToken("exp 1e300", try appleSigned(header: rsHeader, claims: claims(exp: "1e300"))),
            nativeToken(
                "exp of 400 digits",
                try appleSigned(header: rsHeader, claims: claims(exp: String(repeating: "9", count: 400)))
            ),
            nativeToken("exp -1e300", try appleSigned(header: rsHeader, claims: claims(exp: "-1e300"))),
            nativeToken("iat 1e308", try appleSigned(header: rsHeader, claims: claims(iat: "1e308"))),
            nativeToken("duplicate claims", try appleSigned(header: rsHeader, claims: #"{"sub":"a","sub":"b"}"#)),
            // POST /auth/refresh
            HostileRequest(name: "refresh: empty body", method: .post, path: "/auth/refresh", headers: json, body: []),
            HostileRequest(
                name: "refresh: empty token",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":""}"#.utf8)
            ),
            HostileRequest(
                name: "refresh: random token",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":"\#(String(repeating: "r", count: 1_000))"}"#.utf8)
            ),
            HostileRequest(
                name: "refresh: token is a number",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":123456789012345678901234567890}"#.utf8)
            ),
            HostileRequest(
                name: "refresh: 1 MB token",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":"\#(megabyte)"}"#.utf8)
            ),
            HostileRequest(
                name: "refresh: deep nesting",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(deepArray.utf8)
            ),
            HostileRequest(
                name: "refresh: invalid UTF-8",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: [0x7B, 0x22, 0xFF, 0x22, 0x7D]
            ),
            HostileRequest(
                name: "refresh: duplicate keys",
                method: .post,
                path: "/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":"x","refreshToken":"y"}"#.utf8)
            ),
            // POST /auth/logout
            HostileRequest(name: "logout: nothing", method: .post, path: "/auth/logout"),
            HostileRequest(name: "logout: junk bearer", method: .post, path: "/auth/logout", headers: bearer("junk")),
            HostileRequest(
                name: "logout: alg none access token",
                method: .post,
                path: "/auth/logout",
                headers: bearer(
                    unsigned(header: #"{"alg":"none","kid":"\#(victim.serverKeyID)"}"#, claims: accessClaims)
                )
            ),
            HostileRequest(
                name: "logout: unknown refresh token",
                method: .post,
                path: "/auth/logout",
                headers: json,
                body: Array(#"{"refreshToken":"bogus"}"#.utf8),
                answer: .noContent
            ),
            // GET and DELETE /api/me
            HostileRequest(name: "me: no credentials", method: .get, path: "/api/me"),
            HostileRequest(name: "me: junk bearer", method: .get, path: "/api/me", headers: bearer("a.b.c")),
            HostileRequest(
                name: "me: bearer of 20 KB",
                method: .get,
                path: "/api/me",
                headers: bearer(String(repeating: "b", count: 20_000))
            ),
            HostileRequest(
                name: "me: forged ES256 with siwa's kid",
                method: .get,
                path: "/api/me",
                headers: bearer(forgedES256)
            ),
            HostileRequest(
                name: "me: alg none with siwa's kid",
                method: .get,
                path: "/api/me",
                headers: bearer(
                    unsigned(header: #"{"alg":"none","kid":"\#(victim.serverKeyID)"}"#, claims: accessClaims)
                )
            ),
            HostileRequest(
                name: "me: HS256 with siwa's kid",
                method: .get,
                path: "/api/me",
                headers: bearer(
                    unsigned(
                        header: #"{"alg":"HS256","kid":"\#(victim.serverKeyID)"}"#,
                        claims: accessClaims,
                        signature: "AAAA"
                    )
                )
            ),
            HostileRequest(
                name: "me: Basic credentials",
                method: .get,
                path: "/api/me",
                headers: [.authorization: "Basic dXNlcjpwYXNz"]
            ),
            HostileRequest(
                name: "me: junk session cookie",
                method: .get,
                path: "/api/me",
                headers: [.cookie: "siwa_session=\(String(repeating: "%", count: 500))"]
            ),
            HostileRequest(
                name: "delete me: forged ES256",
                method: .delete,
                path: "/api/me",
                headers: bearer(forgedES256)
            ),
            HostileRequest(
                name: "delete me: access token with a tampered sub",
                method: .delete,
                path: "/api/me",
                headers: bearer(Self.tamperedSub(victim.accessToken))
            ),
            // POST /auth/apple/notifications
            notification("notification: empty body", []),
            notification("notification: payload not a JWT", Array(#"{"payload":"garbage"}"#.utf8)),
            notification("notification: payload is a number", Array(#"{"payload":1}"#.utf8)),
            notification("notification: duplicate payload", Array(#"{"payload":"a.b.c","payload":"x.y.z"}"#.utf8)),
            notification("notification: deep nesting", Array(deepArray.utf8)),
            notification("notification: invalid UTF-8", [0x7B, 0x22, 0x70, 0xFF, 0x22, 0x3A, 0x31, 0x7D]),
            notification("notification: 1 MB body", Array(#"{"payload":"\#(megabyte)"}"#.utf8)),
            notification(
                "notification: account-delete signed by a foreign key",
                Array(#"{"payload":"\#(try appleSigned(header: rsHeader, claims: notificationClaims))"}"#.utf8)
            ),
            notification(
                "notification: account-delete with alg none",
                Array(
                    #"{"payload":"\#(unsigned(header: rsHeader.replacing("RS256", with: "none"), claims: notificationClaims))"}"#
                        .utf8
                )
            ),
            notification("notification: form-encoded", Array("payload=a.b.c".utf8), headers: form),
            // POST /auth/apple/callback (HTML error page by design)
            callback("callback: empty body", ""),
            callback("callback: not a form", "%%%"),
            callback("callback: unknown state", "state=unknown&code=c.0.x&id_token=\(callbackToken)"),
            callback("callback: state given twice", "state=a&state=b&code=c&id_token=a.b.c"),
            callback("callback: invalid UTF-8", "state=%FF%FE&code=c&id_token=a.b.c"),
            callback(
                "callback: user is deeply nested",
                "state=s&code=c&id_token=a.b.c&user=\(String(repeating: "%5B", count: 2_000))"
            ),
            callback("callback: 1 MB body", "state=s&code=c&id_token=" + megabyte),
            // GET /auth/apple/authorize: a browser route, so its refusals are pages
            HostileRequest(
                name: "authorize: foreign return URL",
                method: .get,
                path: "/auth/apple/authorize?returnUrl=https%3A%2F%2Fevil.example.com%2F",
                answer: .html
            ),
            HostileRequest(
                name: "authorize: javascript return URL",
                method: .get,
                path: "/auth/apple/authorize?returnUrl=javascript%3Aalert(1)",
                answer: .html
            ),
            HostileRequest(
                name: "authorize: protocol-relative return URL",
                method: .get,
                path: "/auth/apple/authorize?returnUrl=%2F%2Fevil.example.com",
                answer: .html
            ),
            HostileRequest(
                name: "authorize: Android package not allowed",
                method: .get,
                path: "/auth/apple/authorize?returnUrl=android%3Acom.evil.app",
                answer: .html
            ),
            HostileRequest(
                name: "authorize: return URL of 8 KB",
                method: .get,
                path:
                    "/auth/apple/authorize?returnUrl=https%3A%2F%2Fevil.example.com%2F\(String(repeating: "a", count: 8_000))",
                answer: .html
            ),
            // Headers
            HostileRequest(
                name: "bearer of 40 KB",
                method: .get,
                path: "/api/me",
                headers: bearer(String(repeating: "b", count: 40_000)),
                answer: .parser
            ),
            HostileRequest(
                name: "header list of 100 KB",
                method: .get,
                path: "/api/me",
                headers: [HTTPField.Name("X-Pad")!: String(repeating: "p", count: 100_000)],
                answer: .parser
            ),
            HostileRequest(
                name: "2,000 headers",
                method: .get,
                path: "/api/me",
                headers: HTTPFields((0..<2_000).map { HTTPField(name: HTTPField.Name("X-H\($0)")!, value: "v") }),
                answer: .parser
            ),
            // The compatibility contracts
            HostileRequest(
                name: "ServiceStack: junk accessToken",
                method: .post,
                path: "/auth/apple",
                headers: json,
                body: Array(#"{"provider":"apple","accessToken":"a.b.c"}"#.utf8),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "ServiceStack: deep nesting",
                method: .post,
                path: "/json/reply/Authenticate",
                headers: json,
                body: Array(deepArray.utf8),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "ServiceStack: invalid UTF-8 form",
                method: .post,
                path: "/api/Authenticate",
                headers: form,
                body: Array("provider=apple&accessToken=%FF".utf8),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "ServiceStack: 1 MB token",
                method: .post,
                path: "/auth/apple",
                headers: json,
                body: Array(#"{"provider":"apple","accessToken":"\#(megabyte)"}"#.utf8),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "ServiceStack: hello secure without a session",
                method: .get,
                path: "/hello/secure/x",
                answer: .contractJSON
            ),
            HostileRequest(
                name: "Vapor: alg none",
                method: .post,
                path: "/api/auth/siwa",
                headers: json,
                body: Array(
                    #"{"appleIdentityToken":"\#(unsigned(header: #"{"alg":"none"}"#, claims: claims()))"}"#.utf8
                ),
                answer: .vaporJSON
            ),
            HostileRequest(
                name: "Vapor: junk bearer",
                method: .get,
                path: "/api/users/me",
                headers: bearer("x"),
                answer: .vaporJSON
            ),
            callback(
                "Vapor: callback with an unknown state",
                "state=x&code=c&id_token=a.b.c",
                path: "/web/auth/siwa/callback"
            ),
            HostileRequest(
                name: "RentManager: deep nesting",
                method: .post,
                path: "/api/auth/apple",
                headers: json,
                body: Array(deepObject.utf8),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "RentManager: kid traversal",
                method: .post,
                path: "/api/auth/apple",
                headers: json,
                body: Array(
                    #"{"identityToken":"\#(try appleSigned(header: #"{"alg":"RS256","kid":"../../etc/passwd"}"#, claims: claims()))"}"#
                        .utf8
                ),
                answer: .contractJSON
            ),
            HostileRequest(
                name: "RentManager: refresh with junk",
                method: .post,
                path: "/api/auth/refresh",
                headers: json,
                body: Array(#"{"refreshToken":"\#(megabyte)"}"#.utf8),
                answer: .contractJSON
            ),
        ]
        // Every JSON route also refuses an empty JSON object and plain garbage.
        for path in ["/auth/refresh", "/auth/apple/notifications"] {
            requests.append(
                HostileRequest(name: "\(path): {}", method: .post, path: path, headers: json, body: Array("{}".utf8))
            )
        }
        return requests
    }

    // MARK: - Helpers

    /// Sends one request and checks the answer's status and shape.
    static func check(_ request: HostileRequest, harness: ServerHarness) async throws {
        if request.answer == .parser {
            try await checkOnRawSocket(request, harness: harness)
            return
        }
        let response = try await harness.server.execute(
            uri: request.path,
            method: request.method,
            headers: request.headers,
            body: request.body.map { ByteBuffer(bytes: $0) }
        )
        if request.answer == .noContent {
            #expect(response.status == .noContent, "\(request): \(response.status)")
            return
        }
        #expect((400..<500).contains(response.status.code), "\(request): \(response.status)")
        let text = String(buffer: response.body)
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        switch request.answer {
        case .json:
            #expect(object?["error"] is String && object?["message"] is String, "\(request): \(text.prefix(300))")
        case .contractJSON:
            let shaped =
                object?["responseStatus"] is [String: Any] || object?["success"] as? Bool == false
                || object?["error"] is String
            #expect(shaped, "\(request): \(text.prefix(300))")
        case .vaporJSON:
            #expect(object?["error"] as? Bool == true && object?["reason"] is String, "\(request): \(text.prefix(300))")
        case .html:
            #expect(response.headers[.contentType]?.hasPrefix("text/html") == true, "\(request): not HTML")
        case .parser, .noContent:
            break
        }
    }

    /// Sends a request the HTTP parser refuses on its own connection: a bare 400, then the server closes.
    static func checkOnRawSocket(_ request: HostileRequest, harness: ServerHarness) async throws {
        let port = try #require(Int(harness.serverURL.split(separator: ":").last ?? ""))
        let connection = try RawSocketConnection(port: port)
        var head = "\(request.method.rawValue) \(request.path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for field in request.headers { head += "\(field.name.rawName): \(field.value)\r\n" }
        let bytes = Array((head + "Content-Length: \(request.body?.count ?? 0)\r\n\r\n").utf8) + (request.body ?? [])
        _ = try await offCooperativePool { connection.send(bytes) }
        let answer = try await connection.readUntilClosed(timeout: .seconds(5))
        let text = String(decoding: answer.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400"), "\(request): \(text.prefix(200))")
        #expect(answer.closedByServer, "\(request): connection left open")
    }

    /// Everything a request could change: accounts, sessions, notifications, deletions, revocations, keys.
    static func snapshot(_ store: any AccountStore) async throws -> [String] {
        let future = Date(timeIntervalSinceNow: 10 * 365 * 86_400)
        return [
            "\(try await store.users(limit: 10_000, after: nil))",
            "\(try await store.revokedSessions(since: .distantPast))",
            "\(try await store.appleNotifications(limit: 10_000))",
            "\(try await store.deletedAccounts(since: .distantPast))",
            "\(try await store.dueAppleRevocations(now: future, limit: 10_000))",
            "\(try await store.usersChanged(since: .distantPast))",
            "\(try await store.signingKeys().count) signing keys",
        ]
    }

    static func signInVictim(_ harness: ServerHarness) async throws -> Victim {
        let answer = try await harness.signIn("victim@example.com", givenName: "Victim")
        #expect(answer.status == .ok)
        let accessToken = try #require(answer.json.string("accessToken"))
        let refreshToken = try #require(answer.json.string("refreshToken"))
        let serverKeys = try await harness.call(.get, "/.well-known/jwks.json")
        let serverKeyID = try #require((serverKeys.json["keys"] as? [[String: Any]])?.first?["kid"] as? String)
        let appleKeys = try await harness.emulatorJSON("/auth/keys")
        let appleKeyID = try #require((appleKeys["keys"] as? [[String: Any]])?.first?["kid"] as? String)
        let user = try #require(try await harness.store.users(limit: 10, after: nil).first)
        return Victim(
            sub: user.appleUserID.rawValue,
            accessToken: accessToken,
            refreshToken: refreshToken,
            serverKeyID: serverKeyID,
            appleKeyID: appleKeyID
        )
    }

    /// A real access token with its `sub` changed and its signature kept.
    static func tamperedSub(_ token: String) -> String {
        let parts = token.split(separator: ".").map(String.init)
        guard parts.count == 3 else { return token }
        var base64 = parts[1].replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            var claims = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return token }
        claims["sub"] = "someone-else"
        guard let tampered = try? JSONSerialization.data(withJSONObject: claims) else { return token }
        return parts[0] + "." + Base64URLText.encode(tampered) + "." + parts[2]
    }
}

extension ServerHarness {
    /// GETs a JSON object from the emulator.
    func emulatorJSON(_ path: String) async throws -> [String: Any] {
        let base = try AppleBaseURL(emulatorURL)
        let answer = try await AsyncHTTPClientTransport().send(
            HTTPRequest(method: .get, scheme: base.scheme, authority: base.authority, path: path),
            body: nil,
            timeout: .seconds(10)
        )
        return (try JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
    }
}
