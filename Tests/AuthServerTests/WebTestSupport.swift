import AppleSignIn
import AppleSignInAsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// A browser's side of the web flow, over plain HTTP: the server's routes, the emulator's consent page and Apple's
/// auto-submitting `form_post`.
struct WebPage: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: String

    var location: String? { headers[.location] }

    /// `Set-Cookie` values by cookie name (the whole header, attributes included).
    var setCookies: [String: String] {
        var cookies: [String: String] = [:]
        for value in headers[values: .setCookie] {
            if let name = value.split(separator: "=", maxSplits: 1).first { cookies[String(name)] = value }
        }
        return cookies
    }

    /// The value of a cookie this answer sets.
    func cookie(_ name: String) -> String? {
        guard let header = setCookies[name] else { return nil }
        let pair = header.split(separator: ";", maxSplits: 1)[0]
        return String(pair.dropFirst(name.count + 1))
    }

    /// The hidden fields of a form, as a browser would post them.
    func hiddenFields() throws -> [(String, String)] {
        let pattern = try NSRegularExpression(pattern: #"<input type="hidden" name="([^"]+)" value="([^"]*)">"#)
        let range = NSRange(body.startIndex..., in: body)
        return pattern.matches(in: body, range: range).map { match in
            let name = String(body[Range(match.range(at: 1), in: body)!])
            let value = String(body[Range(match.range(at: 2), in: body)!])
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
            return (name, value)
        }
    }
}

/// A consented authorization at the emulator: where Apple's page posts, and what.
struct AppleFormPost: Sendable {
    var action: String
    var fields: [(String, String)]

    subscript(_ name: String) -> String? { fields.first { $0.0 == name }?.1 }

    /// The same post with one field replaced (or added, or removed with `nil`).
    func replacing(_ name: String, with value: String?) -> AppleFormPost {
        var copy = self
        copy.fields.removeAll { $0.0 == name }
        if let value { copy.fields.append((name, value)) }
        return copy
    }
}

extension ServerHarness {
    static func formEncode(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
    }

    /// A request to the server as a browser sends it.
    func browser(
        _ method: HTTPRequest.Method,
        _ path: String,
        form: [(String, String)]? = nil,
        body: String? = nil,
        cookies: [String: String] = [:],
        headers: HTTPFields = [:]
    ) async throws -> WebPage {
        var fields = headers
        // The browser's own cookies (the web flow's binding), unless the test names them.
        let cookies = browserCookies.all.merging(cookies) { _, named in named }.filter { !$0.value.isEmpty }
        if !cookies.isEmpty, fields[.cookie] == nil {
            fields[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        var payload: ByteBuffer?
        if let form {
            fields[.contentType] = "application/x-www-form-urlencoded"
            payload = ByteBuffer(string: Self.formEncode(form))
        } else if let body {
            payload = ByteBuffer(string: body)
        }
        let response = try await server.execute(uri: path, method: method, headers: fields, body: payload)
        browserCookies.keep(from: response.headers)
        return WebPage(
            status: response.status,
            headers: response.headers,
            body: String(buffer: response.body)
        )
    }

    /// A request to the emulator (Apple), as a browser sends it.
    func appleBrowser(
        _ method: HTTPRequest.Method,
        _ pathAndQuery: String,
        form: [(String, String)]? = nil
    )
        async throws -> WebPage
    {
        let base = try AppleBaseURL(emulatorURL)
        var request = HTTPRequest(method: method, scheme: base.scheme, authority: base.authority, path: pathAndQuery)
        if form != nil { request.headerFields[.contentType] = "application/x-www-form-urlencoded" }
        let answer = try await AsyncHTTPClientTransport().send(
            request,
            body: form.map { Array(Self.formEncode($0).utf8) },
            timeout: .seconds(10)
        )
        return WebPage(
            status: answer.response.status,
            headers: answer.response.headerFields,
            body: String(decoding: answer.body, as: UTF8.self)
        )
    }

    /// `GET /auth/apple/authorize`: the 302 to Apple.
    func startWebSignIn(returnURL: String? = "/login") async throws -> WebPage {
        var path = "/auth/apple/authorize"
        if let returnURL {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            path += "?returnUrl=\(returnURL.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }
        return try await browser(.get, path)
    }

    /// The query parameters of Apple's authorize URL.
    static func query(of url: String) -> [String: String] {
        guard let components = URLComponents(string: url) else { return [:] }
        var out: [String: String] = [:]
        for item in components.queryItems ?? [] { out[item.name] = item.value ?? "" }
        return out
    }

    /// Follows the authorize redirect to the emulator and presses Continue (or Cancel) on its consent page.
    func consent(
        at authorizeURL: String,
        email: String,
        givenName: String = "Jane",
        familyName: String = "Appleseed",
        hideEmail: Bool = false,
        action: String = "continue"
    ) async throws -> AppleFormPost {
        #expect(authorizeURL.hasPrefix(emulatorURL + "/auth/authorize?"))
        let page = try await appleBrowser(.get, String(authorizeURL.dropFirst(emulatorURL.count)))
        try #require(page.status == .ok, "consent page: \(page.body)")
        let fields =
            try page.hiddenFields() + [
                ("email", email), ("given_name", givenName), ("family_name", familyName),
                ("hide_email", hideEmail ? "true" : "false"), ("action", action),
            ]
        let post = try await appleBrowser(.post, "/auth/authorize", form: fields)
        try #require(post.status == .ok, "form_post page: \(post.body)")
        let action = try #require(
            post.body.firstMatch(of: #/<form method="post" action="([^"]+)"/#).map { String($0.output.1) }
        )
        return AppleFormPost(action: action, fields: try post.hiddenFields())
    }

    /// Apple's cross-site `form_post` to the server's callback (no cookie: SameSite=Lax cookies are not sent).
    func postCallback(_ post: AppleFormPost) async throws -> WebPage {
        #expect(post.action == serverURL + "/auth/apple/callback")
        return try await browser(
            .post,
            "/auth/apple/callback",
            form: post.fields,
            headers: [.origin: emulatorURL]
        )
    }

    /// The whole flow: authorize, consent, callback. Returns the callback's answer.
    func webSignIn(
        email: String,
        givenName: String = "Jane",
        hideEmail: Bool = false,
        returnURL: String = "/login"
    ) async throws -> WebPage {
        let start = try await startWebSignIn(returnURL: returnURL)
        try #require(start.status == .found, "authorize: \(start.body)")
        let post = try await consent(
            at: try #require(start.location),
            email: email,
            givenName: givenName,
            hideEmail: hideEmail
        )
        return try await postCallback(post)
    }
}
