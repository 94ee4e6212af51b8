import AppleSignIn
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The web flow: authorize page, consent, Apple's auto-submitting `form_post`, and the code exchange with the same
/// `redirect_uri`, parsed and verified by `AppleSignIn`.
@Suite("Emulator: web authorization")
struct WebFlowTests {
    private func authorizeQuery(
        clientID: String = EmulatorHarness.servicesID.rawValue,
        redirectURI: String = EmulatorHarness.redirectURI,
        responseMode: String = "form_post",
        scope: String? = "name email",
        state: String = "state-1",
        nonce: String = "nonce-1"
    ) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func encode(_ value: String) -> String { value.addingPercentEncoding(withAllowedCharacters: allowed)! }
        var query =
            "client_id=\(encode(clientID))&redirect_uri=\(encode(redirectURI))&response_type=code%20id_token"
            + "&response_mode=\(responseMode)&state=\(encode(state))&nonce=\(encode(nonce))"
        if let scope { query += "&scope=\(encode(scope))" }
        return query
    }

    /// The hidden fields of the auto-submitting form, as a browser would post them.
    private func formFields(_ html: String) throws -> [(String, String)] {
        let pattern = try NSRegularExpression(pattern: #"<input type="hidden" name="([^"]+)" value="([^"]*)">"#)
        let range = NSRange(html.startIndex..., in: html)
        return pattern.matches(in: html, range: range).map { match in
            let name = String(html[Range(match.range(at: 1), in: html)!])
            let value = String(html[Range(match.range(at: 2), in: html)!])
                .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
            return (name, value)
        }
    }

    private func formBody(_ fields: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Array(
            fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
                .joined(separator: "&").utf8
        )
    }

    /// Presses Continue (or Cancel) on the consent page.
    private func consent(
        _ emulator: EmulatorHarness,
        email: String,
        hideEmail: Bool = false,
        action: String = "continue",
        query: String? = nil
    ) async throws -> EmulatorHarness.Answer {
        let page = try await emulator.send(.get, "/auth/authorize?\(query ?? authorizeQuery())")
        try #require(page.status == 200)
        var fields = try formFields(page.body)
        fields += [
            ("email", email), ("given_name", "Web"), ("family_name", "User"),
            ("hide_email", hideEmail ? "true" : "false"),
            ("action", action),
        ]
        return try await emulator.send(
            .post,
            "/auth/authorize",
            body: String(decoding: formBody(fields), as: UTF8.self),
            contentType: "application/x-www-form-urlencoded"
        )
    }

    @Test func consentPostsCodeTokenStateAndUserToTheRedirectURI() async throws {
        try await EmulatorHarness.run { emulator in
            let page = try await emulator.send(.get, "/auth/authorize?\(authorizeQuery())")
            #expect(page.status == 200)
            #expect(page.body.contains("Share My Email"))
            #expect(page.body.contains("Hide My Email"))
            #expect(page.body.contains("com.example.web"))

            let answer = try await consent(emulator, email: "web@example.com", hideEmail: true)
            #expect(answer.status == 200)
            #expect(answer.body.contains(#"action="https://app.example.com/auth/apple/callback""#))
            #expect(answer.body.contains(".submit()"))
            let callback = try AuthorizationCallback(formBody: formBody(try formFields(answer.body)))
            guard case .authorized(let code, let idToken, let state, let user) = callback else {
                Issue.record("expected an authorization, got \(callback)")
                return
            }
            #expect(state == "state-1")
            let relay = try #require(user?.email)
            #expect(relay.hasSuffix("@privaterelay.appleid.com"))
            #expect(user?.firstName == "Web")
            #expect(user?.lastName == "User")

            let verifier = try emulator.verifier()
            let token = try await verifier.verify(idToken, expectedNonce: "nonce-1")
            #expect(token.aud == EmulatorHarness.servicesID)
            #expect(token.email == relay)
            #expect(token.realUserStatus == nil)

            let apple = try emulator.client()
            await #expect(throws: AppleSignInError.invalidGrant) {
                try await apple.exchange(code: code, for: token, redirectURI: "https://app.example.com/other")
            }
            let second = try await consent(emulator, email: "web@example.com")
            let secondCallback = try AuthorizationCallback(formBody: formBody(try formFields(second.body)))
            guard case .authorized(let secondCode, let secondToken, _, let secondUser) = secondCallback else {
                Issue.record("expected a second authorization")
                return
            }
            #expect(secondUser == nil)  // `user` only the first time
            let verifiedSecond = try await verifier.verify(secondToken, expectedNonce: "nonce-1")
            let tokens = try await apple.exchange(
                code: secondCode,
                for: verifiedSecond,
                redirectURI: EmulatorHarness.redirectURI
            )
            #expect(tokens.refreshToken != nil)
        }
    }

    /// The web flow's `scope=name`: the first authorization's `user` has the name and no email, and the token no email.
    @Test func theNameScopeAloneGivesNoEmail() async throws {
        try await EmulatorHarness.run { emulator in
            let answer = try await consent(emulator, email: "named@example.com", query: authorizeQuery(scope: "name"))
            #expect(answer.status == 200)
            let callback = try AuthorizationCallback(formBody: formBody(try formFields(answer.body)))
            guard case .authorized(_, let idToken, _, let user) = callback else {
                Issue.record("expected an authorization, got \(callback)")
                return
            }
            #expect(user?.firstName == "Web")
            #expect(user?.email == nil)
            let token = try await emulator.verifier().verify(idToken, expectedNonce: "nonce-1")
            #expect(token.email == nil)
        }
    }

    @Test func cancelPostsUserCancelledAuthorize() async throws {
        try await EmulatorHarness.run { emulator in
            let answer = try await consent(emulator, email: "cancel@example.com", action: "cancel")
            let callback = try AuthorizationCallback(formBody: formBody(try formFields(answer.body)))
            #expect(callback == .cancelled(state: "state-1"))
        }
    }

    @Test func badAuthorizeRequestsGetApplesErrorPageNotARedirect() async throws {
        try await EmulatorHarness.run { emulator in
            for (query, expected) in [
                (authorizeQuery(clientID: "com.unknown"), "invalid_client"),
                (authorizeQuery(redirectURI: "https://evil.example/callback"), "invalid_request"),
                (authorizeQuery(responseMode: "query"), "invalid_request"),
            ] {
                let page = try await emulator.send(.get, "/auth/authorize?\(query)")
                #expect(page.status == 400)
                #expect(page.body.contains(expected))
                #expect(page.body.contains("<html"))
            }
        }
    }

    @Test func queryModeWithoutScopeRedirectsWithCode() async throws {
        try await EmulatorHarness.run { emulator in
            let query = authorizeQuery(responseMode: "query", scope: nil).replacingOccurrences(
                of: "response_type=code%20id_token",
                with: "response_type=code"
            )
            let answer = try await consent(emulator, email: "query@example.com", query: query)
            #expect(answer.status == 302)
            let location = try #require(answer.location)
            #expect(location.hasPrefix(EmulatorHarness.redirectURI + "?code=c"))
            #expect(location.hasSuffix("&state=state-1"))
        }
    }
}
