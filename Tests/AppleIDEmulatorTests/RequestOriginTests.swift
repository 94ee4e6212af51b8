import AppleSignIn
import Foundation
import HTTPTypes
import Testing

/// Who may drive the emulator: its own console pages and scripts (curl, tests, siwa's CLI), under its own host names.
/// A page on another site must not reach the control API, nor, by rebinding a name of its own to 127.0.0.1, read
/// the console or drive either.
@Suite("Emulator: only its own pages, scripts and host names drive it")
struct RequestOriginTests {
    private static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    private static let host = HTTPField.Name("Host")!

    @Test func theControlAPIRefusesRequestsFromAnotherSite() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("victim@example.com")
            let port = try #require(emulator.baseURL.authority.split(separator: ":").last)
            let crossSite: [HTTPFields] = [
                [.origin: "http://evil.example"],
                [.origin: "null"],
                [.origin: "http://localhost:1"],
                [Self.secFetchSite: "cross-site"],
                [Self.secFetchSite: "same-site", .origin: "http://127.0.0.1:\(port)"],
                [Self.secFetchSite: "same-site"],
            ]
            for headers in crossSite {
                let deleted = try await Self.postJSON(
                    emulator,
                    "/emulator/notifications",
                    #"{"clientId":"com.example.app","email":"victim@example.com","type":"account-delete"}"#,
                    headers: headers
                )
                #expect(deleted.status == 403, "\(headers)")
                try Self.expectControlError(deleted, "cross_site_request")
                let faults = try await Self.postJSON(
                    emulator,
                    "/emulator/faults",
                    #"{"endpoint":"keys","mode":"error"}"#,
                    headers: headers
                )
                #expect(faults.status == 403, "\(headers)")
                let log = try await emulator.send(.get, "/emulator/log", headers: headers)
                #expect(log.status == 403, "\(headers)")
            }
            #expect(emulator.notifications.all.isEmpty)
            #expect(try await emulator.send(.get, "/auth/keys").status == 200)
            #expect(try await emulator.page("/").body.contains(#"data-email="victim@example.com""#))

            // Scripts send no Origin; the console's own page sends its origin; both drive it.
            let script = try await Self.postJSON(emulator, "/emulator/faults", #"{"endpoint":"keys","mode":"off"}"#)
            #expect(script.status == 200)
            let ownPage = try await Self.postJSON(
                emulator,
                "/emulator/faults",
                #"{"endpoint":"keys","mode":"off"}"#,
                headers: [.origin: emulator.origin, Self.secFetchSite: "same-origin"]
            )
            #expect(ownPage.status == 200)
            #expect(try await emulator.send(.post, "/emulator/rotate-keys").status == 200)  // no body at all
        }
    }

    @Test func theControlAPIRefusesBodiesThatAreNotJSON() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("victim@example.com")
            let deleteVictim = #"{"clientId":"com.example.app","email":"victim@example.com","type":"account-delete"}"#
            // What a cross-site `fetch(…, {mode: "no-cors"})` or a form can send without asking the emulator first.
            for contentType in ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"] {
                let answer = try await emulator.send(
                    .post,
                    "/emulator/notifications",
                    body: deleteVictim,
                    contentType: contentType
                )
                #expect(answer.status == 415, "\(contentType)")
                try Self.expectControlError(answer, "unsupported_media_type")
            }
            #expect(emulator.notifications.all.isEmpty)

            let charset = try await emulator.send(
                .post,
                "/emulator/notifications",
                body: deleteVictim,
                contentType: "application/json; charset=utf-8"
            )
            #expect(charset.status == 200)
            #expect(emulator.notifications.all.count == 1)
        }
    }

    @Test func theConsoleAndControlAPIAnswerOnlyTheirOwnHostNames() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("victim@example.com")
            let port = try #require(emulator.baseURL.authority.split(separator: ":").last)
            // A name of the attacker's that resolves to 127.0.0.1: to the browser its Origin is the page's own.
            let rebound = "attacker.example:\(port)"
            let browser: HTTPFields = [
                Self.host: rebound, .origin: "http://\(rebound)", Self.secFetchSite: "same-origin",
            ]

            let console = try await emulator.send(.get, "/", headers: [Self.host: rebound, .accept: "text/html"])
            #expect(console.status == 421)
            #expect(!console.body.contains("victim@example.com"))
            let form = try await emulator.send(
                .post,
                "/console/faults",
                body: "endpoint=keys&mode=error",
                contentType: "application/x-www-form-urlencoded",
                headers: browser
            )
            #expect(form.status == 421)
            let log = try await emulator.send(.get, "/emulator/log", headers: [Self.host: rebound])
            #expect(log.status == 421)
            try Self.expectControlError(log, "misdirected_request")
            let deleted = try await Self.postJSON(
                emulator,
                "/emulator/notifications",
                #"{"clientId":"com.example.app","email":"victim@example.com","type":"account-delete"}"#,
                headers: browser
            )
            #expect(deleted.status == 421)
            #expect(emulator.notifications.all.isEmpty)
            #expect(try await emulator.send(.get, "/auth/keys").status == 200)

            // Every loopback name is the emulator's own; Apple's endpoints answer any name siwa is configured with.
            for name in ["localhost", "LOCALHOST", "127.0.0.1", "127.5.6.7", "[::1]"] {
                let page = try await emulator.send(.get, "/", headers: [Self.host: "\(name):\(port)"])
                #expect(page.status == 200, "\(name)")
            }
            let keys = try await emulator.send(.get, "/auth/keys", headers: [Self.host: rebound])
            #expect(keys.status == 200)
        }
    }

    @Test func theHostNamesItIsGivenAndItsIssuersAreItsOwn() async throws {
        try await EmulatorHarness.run(hostNames: ["emulator", "Apple.CI.example."]) { emulator in
            let port = try #require(emulator.baseURL.authority.split(separator: ":").last)
            for name in ["emulator", "EMULATOR", "apple.ci.example", "appleid.apple.com"] {
                let authority = "\(name):\(port)"
                let page = try await emulator.send(.get, "/", headers: [Self.host: authority])
                #expect(page.status == 200, "\(name)")
                let fault = try await Self.postJSON(
                    emulator,
                    "/emulator/faults",
                    #"{"endpoint":"keys","mode":"off"}"#,
                    headers: [Self.host: authority, .origin: "http://\(authority)", Self.secFetchSite: "same-origin"]
                )
                #expect(fault.status == 200, "\(name)")
            }
            for name in ["emulator.attacker.example", "attacker.example", "127.0.0.1.attacker.example"] {
                let page = try await emulator.send(.get, "/", headers: [Self.host: "\(name):\(port)"])
                #expect(page.status == 421, "\(name)")
            }
        }
    }

    // MARK: Helpers

    private static func postJSON(
        _ emulator: EmulatorHarness,
        _ path: String,
        _ body: String,
        headers: HTTPFields = [:]
    ) async throws -> EmulatorHarness.Answer {
        try await emulator.send(.post, path, body: body, contentType: "application/json", headers: headers)
    }

    /// The control API's error shape, `{"error": code, "message": text}`.
    private static func expectControlError(_ answer: EmulatorHarness.Answer, _ code: String) throws {
        #expect(answer.headers[.contentType] == "application/json")
        let json = try #require(try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        #expect(json["error"] as? String == code)
        #expect((json["message"] as? String)?.isEmpty == false)
    }
}
