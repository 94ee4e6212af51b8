import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// Apple's server-to-server notifications, delivered by the emulator to `POST /auth/apple/notifications`.
@Suite("Lifecycle: Apple notifications")
struct LifecycleNotificationTests {
    @Test func emailDisabledThenEnabledFollowsTheFlag() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("relay@example.com", hideEmail: true)
                let access = try #require(signIn.json.string("accessToken"))
                #expect(signIn.json.user["emailForwarding"] as? Bool == true)

                #expect(try await deliver(server, "email-disabled", to: "relay@example.com") == 200)
                #expect(try await me(server, access).json.user["emailForwarding"] as? Bool == false)
                #expect(try await deliver(server, "email-enabled", to: "relay@example.com") == 200)
                #expect(try await me(server, access).json.user["emailForwarding"] as? Bool == true)

                let log = try await lifecycle.store.appleNotifications(limit: 10)
                #expect(log.map(\.type) == ["email-enabled", "email-disabled"])
                #expect(log.allSatisfy { $0.outcome == "applied" && $0.userID != nil })
            }
        }
    }

    @Test func consentRevokedEndsEverySessionAtOnce() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let first = try await server.signIn("revoke@example.com")
                let second = try await server.signIn("revoke@example.com")
                let userID = try #require(first.json.user.string("id").flatMap(UserID.init))

                let answer = try await server.emulator(
                    "/emulator/revoke-consent",
                    ["clientId": LifecycleHarness.bundleID, "email": "revoke@example.com"]
                )
                #expect(answer["receiverStatus"] as? Int == 200)
                for session in [first, second] {
                    let me = try await server.call(.get, "/api/me", bearer: session.json.string("accessToken"))
                    #expect(me.status == .unauthorized)
                    let refresh = try await server.call(
                        .post,
                        "/auth/refresh",
                        json: ["refreshToken": try #require(session.json.string("refreshToken"))]
                    )
                    #expect(refresh.status == .unauthorized)
                    #expect(refresh.json.string("error") == "apple_consent_revoked")
                }
                let user = try #require(try await lifecycle.store.user(id: userID))
                #expect(user.appleConsentRevokedAt != nil)
                #expect(try await lifecycle.store.appleToken(userID: userID) == nil)

                // Apple lets the user sign in again: the same account, working sessions.
                let again = try await server.signIn("revoke@example.com")
                #expect(again.status == .ok)
                #expect(again.json.user.string("id") == userID.description)
                #expect(try await me(server, again.json.string("accessToken")).status == .ok)
            }
        }
    }

    @Test func accountDeleteRemovesTheUser() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("gone@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                #expect(try await deliver(server, "account-delete", to: "gone@example.com") == 200)
                #expect(try await lifecycle.store.user(id: userID) == nil)
                let me = try await me(server, signIn.json.string("accessToken"))
                #expect(me.status == .unauthorized)
                let log = try await lifecycle.store.appleNotifications(limit: 10)
                #expect(log.first?.type == "account-delete")
                #expect(log.first?.outcome == "applied")
            }
        }
    }

    @Test func accountDeleteAnonymisesWhenConfigured() async throws {
        try await LifecycleHarness.run { lifecycle in
            let configuration = LifecycleHarness.configuration { $0.deletionMode = .anonymise }
            try await lifecycle.withServer(configuration) { server in
                let signIn = try await server.signIn("anon@example.com", givenName: "Anna")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                #expect(try await deliver(server, "account-delete", to: "anon@example.com") == 200)
                let kept = try #require(try await lifecycle.store.user(id: userID))
                #expect(kept.email == nil)
                #expect(kept.givenName == nil)
                #expect(kept.familyName == nil)
                #expect(try await lifecycle.store.user(appleUserID: AppleUserID(kept.appleUserID.rawValue)) != nil)
                let me = try await me(server, signIn.json.string("accessToken"))
                #expect(me.status == .unauthorized)
                #expect(["session_revoked", "account_deleted"].contains(me.json.user.string("error") ?? ""))
            }
        }
    }

    @Test func aDuplicateDeliveryAnswers200AndChangesNothing() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("twice@example.com", hideEmail: true)
                let access = try #require(signIn.json.string("accessToken"))
                #expect(try await deliver(server, "email-disabled", to: "twice@example.com") == 200)
                let disabled = try #require(lifecycle.delivery.last)
                #expect(try await deliver(server, "email-enabled", to: "twice@example.com") == 200)

                // Apple delivers the email-disabled event again.
                let again = try await server.call(
                    .post,
                    "/auth/apple/notifications",
                    rawBody: String(decoding: disabled, as: UTF8.self)
                )
                #expect(again.status == .ok)
                #expect(again.json.string("outcome") == "duplicate")
                #expect(try await me(server, access).json.user["emailForwarding"] as? Bool == true)
                #expect(try await lifecycle.store.appleNotifications(limit: 10).count == 2)
            }
        }
    }

    @Test func forgedWrongAudienceAndMalformedNotificationsAre400AndChangeNothing() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("forged@example.com", hideEmail: true)
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                #expect(try await deliver(server, "email-disabled", to: "forged@example.com") == 200)
                let genuine = try #require(lifecycle.delivery.last)
                let envelope = try JSONSerialization.jsonObject(with: Data(genuine)) as? [String: String]
                let payload = try #require(envelope?["payload"])
                let before = try await snapshot(lifecycle.store, userID)

                // Claims changed under Apple's signature: an account-delete.
                var parts = payload.split(separator: ".").map(String.init)
                let claimsData = try #require(base64URLDecode(parts[1]))
                var claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
                var events = try #require(
                    try JSONSerialization.jsonObject(with: Data((claims["events"] as? String ?? "").utf8))
                        as? [String: Any]
                )
                events["type"] = "account-delete"
                claims["events"] = String(decoding: try JSONSerialization.data(withJSONObject: events), as: UTF8.self)
                parts[1] = Base64URLText.encode(Array(try JSONSerialization.data(withJSONObject: claims)))
                let forged = try await post(server, ["payload": parts.joined(separator: ".")])
                #expect(forged.status == .badRequest)
                #expect(forged.json.string("error") == "notification_bad_signature")

                // A signature that is not Apple's.
                var resigned = payload.split(separator: ".").map(String.init)
                resigned[2] = Base64URLText.encode(Array(repeating: 7, count: 256))
                let badSignature = try await post(server, ["payload": resigned.joined(separator: ".")])
                #expect(badSignature.json.string("error") == "notification_bad_signature")

                // Signed by Apple, for another team's app.
                _ = try await server.appleCredential("forged@example.com", clientID: LifecycleHarness.otherTeamBundleID)
                let otherTeam = try await server.emulator(
                    "/emulator/notifications",
                    [
                        "clientId": LifecycleHarness.otherTeamBundleID, "email": "forged@example.com",
                        "type": "account-delete",
                    ]
                )
                #expect(otherTeam["receiverStatus"] as? Int == 400)
                let wrongAudience = try await server.call(
                    .post,
                    "/auth/apple/notifications",
                    rawBody: String(decoding: try #require(lifecycle.delivery.last), as: UTF8.self)
                )
                #expect(wrongAudience.status == .badRequest)
                #expect(wrongAudience.json.string("error") == "notification_audience_mismatch")

                for body in ["not json", "{}", #"{"payload": 42}"#, #"{"payload": "abc.def"}"#] {
                    let malformed = try await server.call(.post, "/auth/apple/notifications", rawBody: body)
                    #expect(malformed.status == .badRequest, "\(body)")
                    #expect(malformed.json.string("error")?.hasPrefix("notification_") == true, "\(body)")
                    #expect(malformed.json.string("message")?.isEmpty == false)
                }
                #expect(try await snapshot(lifecycle.store, userID) == before)
            }
        }
    }

    @Test func consentRevokedReachesAnotherInstanceWithinTheRefreshInterval() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { other in
                try await lifecycle.withServer { receiver in
                    // The notification goes to `receiver`; the session was started on `other`.
                    let signIn = try await other.signIn("instances@example.com")
                    let access = try #require(signIn.json.string("accessToken"))
                    #expect(try await me(other, access).status == .ok)
                    #expect(try await deliver(receiver, "consent-revoked", to: "instances@example.com") == 200)
                    #expect(try await me(receiver, access).status == .unauthorized)
                    let refused = try await lifecycle.eventually(within: 3) {
                        try await me(other, access).status == .unauthorized
                    }
                    #expect(refused)
                }
            }
        }
    }

    // MARK: Helpers

    /// Makes the emulator send a notification of `type`; returns the status siwa answered.
    private func deliver(_ server: ServerHarness, _ type: String, to email: String) async throws -> Int? {
        let answer = try await server.emulator(
            "/emulator/notifications",
            ["clientId": LifecycleHarness.bundleID, "email": email, "type": type]
        )
        return answer["receiverStatus"] as? Int
    }

    private func me(
        _ server: ServerHarness,
        _ access: String?
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let answer = try await server.call(.get, "/api/me", bearer: access)
        return (answer.status, ["user": answer.json])
    }

    private func post(
        _ server: ServerHarness,
        _ json: [String: Any]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let answer = try await server.call(.post, "/auth/apple/notifications", json: json)
        return (answer.status, answer.json)
    }

    private func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    private func snapshot(_ store: any AccountStore, _ userID: UserID) async throws -> [String] {
        let user = try await store.user(id: userID)
        let log = try await store.appleNotifications(limit: 100)
        return [
            "\(user.map { "\($0.emailForwarding) \($0.email ?? "-") \($0.appleConsentRevokedAt == nil)" } ?? "deleted")",
            "\(log.count)",
        ]
    }
}
