import AppleSignIn
import Foundation
import HTTPTypes
import Testing

/// The console at `/`: server-rendered HTML with no script, forms that do what the control API does, and the log as a
/// table for browsers.
@Suite("Emulator console")
struct ConsoleTests {
    @Test func theConsoleListsTheAppleIDsAsHTMLWithoutScript() async throws {
        try await EmulatorHarness.run { emulator in
            let hidden = try await emulator.nativeSignIn("ann@example.com", givenName: "Ann", hideEmail: true)
            let shared = try await emulator.nativeSignIn("bob@example.com")
            let page = try await emulator.page("/")
            #expect(page.status == 200)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.body.contains("ann@example.com"))
            #expect(page.body.contains("Ann Appleseed"))
            #expect(page.body.contains(try #require(hidden["user"] as? String)))
            #expect(page.body.contains(try #require(hidden["email"] as? String)))  // the relay address
            #expect(page.body.contains("bob@example.com"))
            #expect(page.body.contains(try #require(shared["user"] as? String)))
            #expect(page.body.contains(#"<tr data-client="com.example.app">"#))
            #expect(page.body.contains(#"<tr data-client="com.example.web">"#))
            #expect(page.body.contains(#"<span class="granted">granted</span>"#))
            #expect(!page.body.lowercased().contains("<script"))
            Self.expectStrictPolicy(page.headers)
        }
    }

    @Test func whatUsersTypedIsEscaped() async throws {
        try await EmulatorHarness.run { emulator in
            let hostileEmail = #""><img src=x onerror=alert(1)>@example.com"#
            let answer = try await emulator.control(
                "native-sign-in",
                ["clientId": "com.example.app", "email": hostileEmail, "givenName": "<script>alert(2)</script>"]
            )
            #expect(answer.status == 200)
            _ = try await emulator.nativeSignIn("x@example.com", clientID: #"com.evil"><script>alert(3)</script>"#)
            let page = try await emulator.page("/")
            #expect(!page.body.contains("<img"))
            #expect(!page.body.lowercased().contains("<script"))
            #expect(page.body.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;@example.com"))
            #expect(page.body.contains("&lt;script&gt;alert(2)&lt;/script&gt;"))
            let log = try await emulator.page("/emulator/log")
            #expect(!log.body.lowercased().contains("<script"))
            #expect(log.body.contains("com.evil&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;"))
        }
    }

    @Test func theSignInFormShowsATokenAndCodeToCopy() async throws {
        try await EmulatorHarness.run { emulator in
            let answer = try await emulator.consoleForm(
                "native-sign-in",
                [
                    ("clientId", "com.example.app"), ("email", "form@example.com"), ("givenName", "Form"),
                    ("familyName", ""), ("nonce", ""), ("hideEmail", "true"),
                ]
            )
            #expect(answer.status == 200)
            #expect(!answer.body.lowercased().contains("<script"))
            Self.expectStrictPolicy(answer.headers)
            let token = try #require(Self.textarea("identity-token", in: answer.body))
            let verified = try await emulator.verifier().verify(token)
            #expect(verified.aud == EmulatorHarness.bundleID)
            #expect(verified.isPrivateEmail == true)
            #expect(answer.body.contains(verified.sub.rawValue))
            let code = try #require(Self.textarea("authorization-code", in: answer.body))
            #expect(try await emulator.client().exchange(code: code, for: verified).refreshToken != nil)

            // Any client id: the page says nobody registers it, and the token is for it.
            let stranger = try await emulator.consoleForm(
                "native-sign-in",
                [("clientId", "com.stranger.app"), ("email", "form@example.com")]
            )
            #expect(stranger.status == 200)
            #expect(stranger.body.contains("no team registers this client id"))
            let strangerToken = try #require(Self.textarea("identity-token", in: stranger.body))
            let strangerConfiguration = try emulator.configuration(bundleIDs: ["com.stranger.app"])
            #expect(try await emulator.verifier(strangerConfiguration).verify(strangerToken).aud == "com.stranger.app")

            let missing = try await emulator.consoleForm("native-sign-in", [("clientId", "com.example.app")])
            #expect(missing.status == 400)
            #expect(missing.body.contains("an Apple ID email is required"))
        }
    }

    @Test func faultsSwitchOnAndOffFromTheConsole() async throws {
        try await EmulatorHarness.run { emulator in
            let on = try await emulator.consoleForm("faults", [("endpoint", "keys"), ("mode", "error"), ("count", "")])
            #expect(on.status == 303)
            #expect(on.location == "/")
            #expect(try await emulator.send(.get, "/auth/keys").status == 500)
            #expect(try await emulator.send(.get, "/auth/keys").status == 500)  // no count: every call
            #expect(try await Self.faultState("keys", emulator) == "error (500) on every call")

            _ = try await emulator.consoleForm("faults", [("endpoint", "token"), ("mode", "timeout"), ("count", "2")])
            #expect(try await Self.faultState("token", emulator) == "timeout on the next 2 calls")

            let off = try await emulator.consoleForm("faults", [("endpoint", "keys"), ("mode", "off"), ("count", "")])
            #expect(off.status == 303)
            #expect(try await emulator.send(.get, "/auth/keys").status == 200)
            #expect(try await Self.faultState("keys", emulator) == "off")

            let bad = try await emulator.consoleForm(
                "faults",
                [("endpoint", "keys"), ("mode", "error"), ("count", "x")]
            )
            #expect(bad.status == 400)
            #expect(bad.body.contains("count must be a positive number"))
            #expect(try await emulator.send(.get, "/auth/keys").status == 200)
        }
    }

    @Test func postsFromAnotherSiteAreRefused() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("victim@example.com")
            let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
            let crossSite: [HTTPFields] = [
                [.origin: "http://evil.example"],
                [.origin: "null"],
                [secFetchSite: "cross-site"],
                [secFetchSite: "same-site", .origin: "http://localhost:1"],
                [secFetchSite: "same-site"],
            ]
            for headers in crossSite {
                let fault = try await emulator.consoleForm(
                    "faults",
                    [("endpoint", "keys"), ("mode", "error")],
                    headers: headers
                )
                #expect(fault.status == 403, "\(headers)")
                #expect(fault.body.contains("Refused"))
                #expect(fault.headers[.contentType] == "text/html; charset=utf-8")
                let revoke = try await emulator.consoleForm(
                    "revoke-consent",
                    [("clientId", "com.example.app"), ("email", "victim@example.com")],
                    headers: headers
                )
                #expect(revoke.status == 403, "\(headers)")
            }
            #expect(try await emulator.send(.get, "/auth/keys").status == 200)
            #expect(emulator.notifications.all.isEmpty)
            #expect(try await emulator.page("/").body.contains(#"<span class="granted">granted</span>"#))

            // A script (no Origin, no Sec-Fetch-Site) and the user typing into the address bar pass.
            let script = try await emulator.consoleForm(
                "faults",
                [("endpoint", "keys"), ("mode", "error")],
                headers: [:]
            )
            #expect(script.status == 303)
            let typed = try await emulator.consoleForm(
                "faults",
                [("endpoint", "keys"), ("mode", "off")],
                headers: [secFetchSite: "none"]
            )
            #expect(typed.status == 303)
        }
    }

    @Test func consentRevokedFromTheConsoleShowsAsRevoked() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("consent@example.com")
            let answer = try await emulator.consoleForm(
                "revoke-consent",
                [("clientId", "com.example.app"), ("email", "consent@example.com")]
            )
            #expect(answer.status == 200)
            #expect(answer.body.contains(#"the receiver answered <strong id="receiver-status">200</strong>"#))
            let event = try await emulator.verifier().verifyNotification(
                body: try #require(emulator.notifications.all.last)
            ).event
            #expect(event.type == .consentRevoked)
            let page = try await emulator.page("/")
            #expect(page.body.contains(#"<span class="revoked">revoked</span>"#))
            #expect(!page.body.contains(#"<span class="granted">granted</span>"#))
        }
    }

    @Test func theLastNotificationIsResentFromTheConsoleAlsoAfterAccountDelete() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("leaving@example.com")
            let sent = try await emulator.consoleForm(
                "notifications",
                [("clientId", "com.example.app"), ("email", "leaving@example.com"), ("type", "account-delete")]
            )
            #expect(sent.status == 200)
            let page = try await emulator.page("/")
            #expect(!page.body.contains(#"data-email="leaving@example.com""#))  // deleted
            let form = try #require(Self.slice(of: page.body, from: #"id="resend-last""#, to: "</form>"))
            let id = try #require(Self.slice(of: form, from: #"name="id" value=""#, to: #"""#))
            let again = try await emulator.consoleForm("notifications/redeliver", [("id", id)])
            #expect(again.status == 200)
            #expect(again.body.contains("redelivered"))
            let bodies = emulator.notifications.all
            try #require(bodies.count == 2)
            #expect(bodies[0] == bodies[1])

            let unknown = try await emulator.consoleForm("notifications/redeliver", [("id", "nosuchid")])
            #expect(unknown.status == 404)
            #expect(unknown.body.contains("unknown_notification"))
        }
    }

    @Test func keysRotateAndAppleIDsAreDeletedFromTheConsole() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("temporary@example.com")
            let before = try await Self.currentKeyID(emulator)
            #expect(try await emulator.consoleForm("rotate-keys", []).status == 303)
            let after = try await Self.currentKeyID(emulator)
            #expect(after != before)
            let keys = try await emulator.send(.get, "/auth/keys").body
            #expect(keys.contains(before) && keys.contains(after))

            let deleted = try await emulator.consoleForm("delete-apple-id", [("email", "temporary@example.com")])
            #expect(deleted.status == 303)
            #expect(!(try await emulator.page("/").body.contains("temporary@example.com")))
            let reborn = try await emulator.nativeSignIn("temporary@example.com")
            #expect(reborn["user"] as? String != credential["user"] as? String)
            #expect(emulator.notifications.all.isEmpty)  // deleting here notifies no one
            let unknown = try await emulator.consoleForm("delete-apple-id", [("email", "nobody@example.com")])
            #expect(unknown.status == 404)
        }
    }

    @Test func theLogIsJSONForScriptsAndATableForBrowsers() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("log@example.com")
            _ = try await emulator.nativeSignIn("log@example.com", clientID: EmulatorHarness.servicesID)
            _ = try await emulator.send(.get, "/auth/keys")

            for accept in [nil, "*/*", "application/json"] {
                let headers: HTTPFields = accept.map { [.accept: $0] } ?? [:]
                let json = try await emulator.send(.get, "/emulator/log", headers: headers)
                #expect(json.status == 200)
                #expect(json.headers[.contentType] == "application/json")
                let entries = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [[String: Any]]
                )
                #expect(entries.map { $0["endpoint"] as? String } == ["native-sign-in", "native-sign-in", "keys"])
                #expect(entries[0]["clientID"] as? String == "com.example.app")
                #expect(entries[0]["outcome"] as? String == "200")
                #expect(entries[0]["time"] is String)
            }

            let table = try await emulator.page("/emulator/log")
            #expect(table.status == 200)
            #expect(table.headers[.contentType] == "text/html; charset=utf-8")
            Self.expectStrictPolicy(table.headers)
            #expect(table.body.contains(#"<table id="log">"#))
            #expect(table.body.contains("<td>native-sign-in</td>"))
            #expect(table.body.contains("<td>keys</td>"))

            let keysOnly = try await emulator.page("/emulator/log?endpoint=keys")
            #expect(keysOnly.body.contains("<td>keys</td>"))
            #expect(!keysOnly.body.contains("<td>native-sign-in</td>"))
            #expect(keysOnly.body.contains(#"<option value="keys" selected>"#))

            let webOnly = try await emulator.page("/emulator/log?endpoint=&clientId=com.example.web")
            #expect(webOnly.body.contains("<td><code>com.example.web</code></td>"))
            #expect(!webOnly.body.contains("<td><code>com.example.app</code></td>"))
            #expect(!webOnly.body.contains("<td>keys</td>"))
        }
    }

    // MARK: Helpers

    /// No script may run, styles only by hash, forms only to the emulator, never framed.
    private static func expectStrictPolicy(_ headers: HTTPFields) {
        let policy = headers[.contentSecurityPolicy] ?? ""
        #expect(policy.contains("default-src 'none'"))
        #expect(policy.contains("form-action 'self'"))
        #expect(policy.contains("base-uri 'none'"))
        #expect(policy.contains("frame-ancestors 'none'"))
        #expect(policy.contains("style-src 'sha256-"))
        #expect(!policy.contains("script-src"))
        #expect(!policy.contains("unsafe"))
    }

    /// The text between the first `start` and the next `end` after it.
    static func slice(of text: String, from start: String, to end: String) -> String? {
        guard let from = text.range(of: start), let to = text.range(of: end, range: from.upperBound..<text.endIndex)
        else { return nil }
        return String(text[from.upperBound..<to.lowerBound])
    }

    /// The content of `<textarea id="…">` (tokens and codes hold no character that HTML escapes).
    private static func textarea(_ id: String, in page: String) -> String? {
        guard let tag = slice(of: page, from: #"<textarea id="\#(id)""#, to: "</textarea>"),
            let close = tag.firstIndex(of: ">")
        else { return nil }
        return String(tag[tag.index(after: close)...])
    }

    private static func faultState(_ endpoint: String, _ emulator: EmulatorHarness) async throws -> String? {
        let row = slice(of: try await emulator.page("/").body, from: #"<tr id="fault-\#(endpoint)">"#, to: "</tr>")
        return row.flatMap { slice(of: $0, from: #"class="fault-state">"#, to: "</td>") }
    }

    private static func currentKeyID(_ emulator: EmulatorHarness) async throws -> String {
        try #require(slice(of: try await emulator.page("/").body, from: #"<code id="current-kid">"#, to: "</code>"))
    }
}
