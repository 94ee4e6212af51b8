import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Testing

/// The audit log's events: each recorded where it happens, with who did it, and never a secret.
@Suite("Server: audit log events")
struct AuditLogTests {
    @Test func logoutAndReuseRecordWhoEndedTheSession() async throws {
        try await ServerHarness.run { harness in
            let first = try await harness.signIn("audit-reuse@example.com")
            let userID = try #require(first.json.user.string("id").flatMap(UserID.init))
            let firstRefresh = try #require(first.json.string("refreshToken"))
            let rotated = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": firstRefresh])
            #expect(rotated.status == .ok)
            harness.clock.advance(by: 10)  // past the grace window for racing tabs
            let reuse = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": firstRefresh])
            #expect(reuse.json.string("error") == "refresh_token_reused")

            let reused = try await events(harness.store, .refreshTokenReuse)
            #expect(reused.count == 1)
            #expect(reused.first?.userID == userID)
            #expect(reused.first?.actor == .system)
            let reuseSession = try #require(reused.first?.sessionID)
            let endedByReuse = try await events(harness.store, .sessionEnded)
            #expect(endedByReuse.count == 1)
            #expect(endedByReuse.first?.sessionID == reuseSession)
            #expect(endedByReuse.first?.actor == .system)
            #expect(endedByReuse.first?.reason == "reuse")

            harness.clock.advance(by: 10)  // events are ordered by time
            let second = try await harness.signIn("audit-reuse@example.com")
            let access = try #require(second.json.string("accessToken"))
            #expect(try await harness.call(.post, "/auth/logout", bearer: access).status == .noContent)
            // Logging out again ends nothing more.
            _ = try await harness.call(.post, "/auth/logout", bearer: access)
            let ended = try await events(harness.store, .sessionEnded)
            #expect(ended.count == 2)
            let logout = try #require(ended.first)
            #expect(logout.actor == .user)
            #expect(logout.userID == userID)
            #expect(logout.reason == "logout")
            #expect(logout.sessionID != reuseSession)
        }
    }

    @Test func refusedSignInsRecordTheirReason() async throws {
        try await ServerHarness.run { harness in
            // Another team's app: not this server's audience.
            let foreign = try await harness.appleCredential(
                "audit-refused@example.com",
                clientID: ServerHarness.otherTeamBundleID
            )
            let expired = try await harness.appleCredential("audit-refused@example.com", expiresIn: -3600)
            var answers: [String] = []
            for credential in [foreign, expired] {
                let answer = try await harness.call(
                    .post,
                    "/auth/apple/native",
                    json: ["identityToken": credential["identityToken"] as? String ?? ""]
                )
                #expect(answer.status == .unauthorized)
                answers.append(try #require(answer.json.string("error")))
            }

            let refused = try await events(harness.store, .signInRefused)
            #expect(refused.count == 2)
            #expect(refused.allSatisfy { $0.channel == .native && $0.userID == nil })
            let reasons = refused.compactMap(\.reason)
            #expect(reasons.count == 2)
            #expect(reasons.allSatisfy { !$0.hasPrefix("identity_token_") && !$0.isEmpty })
            #expect(
                Set(reasons)
                    == Set(answers.map { $0.replacingOccurrences(of: "identity_token_", with: "") })
            )
        }
    }

    @Test func disablingAndEnablingRecordTheOperatorAndTheEndedSessions() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("audit-disable@example.com")
            let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
            let service = AccountStatusService(store: harness.store, clock: harness.clock, logger: Logger(label: "t"))
            let disabled = try #require(try await service.disable(userID))

            let disabledEvents = try await events(harness.store, .accountDisabled)
            #expect(disabledEvents.count == 1)
            #expect(disabledEvents.first?.actor == .operator)
            #expect(disabledEvents.first?.userID == userID)
            let ended = try await events(harness.store, .sessionEnded)
            #expect(ended.map(\.sessionID) == disabled.endedSessions.map(Optional.some))
            #expect(ended.allSatisfy { $0.actor == .operator && $0.reason == "account_disabled" })

            let again = try await harness.signIn("audit-disable@example.com")
            #expect(again.status == .forbidden)
            let refused = try await events(harness.store, .signInRefused)
            #expect(refused.count == 1)
            #expect(refused.first?.reason == "disabled")
            #expect(refused.first?.userID == userID)
            #expect(refused.first?.clientID == ClientID(ServerHarness.bundleID))

            let admin = try #require(AdminSubject("admin-1"))
            #expect(try await service.enable(userID, by: .admin(admin)) != nil)
            let enabled = try await events(harness.store, .accountEnabled)
            #expect(enabled.count == 1)
            #expect(enabled.first?.actor == .admin(admin))
        }
    }

    @Test func deleteMeRecordsTheDeletionItsSessionsAndTheRevocation() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("audit-delete@example.com")
                _ = try await server.signIn("audit-delete@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                let deleted = try await server.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
                #expect(deleted.status == .noContent)

                let deletion = try await events(lifecycle.store, .accountDeleted)
                #expect(deletion.count == 1)
                #expect(deletion.first?.actor == .user)
                #expect(deletion.first?.userID == userID)
                let ended = try await events(lifecycle.store, .sessionEnded)
                #expect(ended.count == 2)
                #expect(ended.allSatisfy { $0.actor == .user && $0.reason == "account_deleted" })
                let done = try await events(lifecycle.store, .appleRevocationConfirmed)
                #expect(done.count == 1)
                #expect(done.first?.userID == userID)
                #expect(try await events(lifecycle.store, .appleRevocationDone).isEmpty)
                #expect(try await events(lifecycle.store, .appleRevocationQueued).isEmpty)
            }
        }
    }

    @Test func aRevocationAppleRefusesIsRecordedAsQueued() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("audit-queued@example.com")
                try await server.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "error"])
                let deleted = try await server.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
                #expect(deleted.status == .noContent)
                let queued = try await events(lifecycle.store, .appleRevocationQueued)
                #expect(queued.count == 1)
                #expect(queued.first?.reason?.isEmpty == false)
                #expect(queued.first?.details["attempts"] == "1")
                #expect(try await events(lifecycle.store, .appleRevocationConfirmed).isEmpty)
            }
        }
    }

    @Test func appleNotificationsRecordWhatTheyAppliedOrWhyNot() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("audit-apple@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                let revoked = try await server.emulator(
                    "/emulator/revoke-consent",
                    ["clientId": LifecycleHarness.bundleID, "email": "audit-apple@example.com"]
                )
                #expect(revoked["receiverStatus"] as? Int == 200)
                let applied = try await events(lifecycle.store, .appleNotificationApplied)
                #expect(applied.count == 1)
                #expect(applied.first?.actor == .apple)
                #expect(applied.first?.userID == userID)
                #expect(applied.first?.details["type"] == "consent-revoked")
                let ended = try await events(lifecycle.store, .sessionEnded)
                #expect(ended.count == 1)
                #expect(ended.first?.actor == .apple)
                #expect(ended.first?.userID == userID)

                // A user Apple knows and siwa never saw.
                _ = try await server.appleCredential("audit-stranger@example.com")
                #expect(try await notify(server, "email-disabled", to: "audit-stranger@example.com") == 200)
                let ignored = try await events(lifecycle.store, .appleNotificationIgnored)
                #expect(ignored.count == 1)
                #expect(ignored.first?.reason == "unknown_user")
                #expect(ignored.first?.details["type"] == "email-disabled")

                #expect(try await notify(server, "account-delete", to: "audit-apple@example.com") == 200)
                let deleted = try await events(lifecycle.store, .accountDeleted)
                #expect(deleted.count == 1)
                #expect(deleted.first?.actor == .apple)
                #expect(deleted.first?.userID == userID)
            }
        }
    }

    @Test func noEventHoldsATokenOrCode() async throws {
        try await LifecycleHarness.run { lifecycle in
            try await lifecycle.withServer { server in
                let credential = try await server.appleCredential("audit-secrets@example.com")
                let identityToken = try #require(credential["identityToken"] as? String)
                let code = try #require(credential["authorizationCode"] as? String)
                let signIn = try await server.call(
                    .post,
                    "/auth/apple/native",
                    json: ["identityToken": identityToken, "authorizationCode": code]
                )
                #expect(signIn.status == .ok)
                let access = try #require(signIn.json.string("accessToken"))
                let refresh = try #require(signIn.json.string("refreshToken"))
                // The same identity token again, refused as a replay once its sessions are used up, or signing in.
                _ = try await server.call(.post, "/auth/apple/native", json: ["identityToken": identityToken])
                let rotated = try await server.call(.post, "/auth/refresh", json: ["refreshToken": refresh])
                let next = try #require(rotated.json.string("refreshToken"))
                _ = try await server.call(.post, "/auth/refresh", json: ["refreshToken": refresh])
                _ = try await server.call(.post, "/auth/logout", json: ["refreshToken": next])
                let other = try await server.signIn("audit-secrets@example.com")
                _ = try await server.call(.delete, "/api/me", bearer: other.json.string("accessToken"))

                let all = try await lifecycle.store.auditEvents(AuditEventFilter(), limit: 500, after: nil).items
                #expect(all.count >= 6)
                let secrets = [identityToken, code, access, refresh, next, other.json.string("accessToken") ?? ""]
                for event in all {
                    let texts = [event.reason ?? ""] + Array(event.details.keys) + Array(event.details.values)
                    for text in texts where !text.isEmpty {
                        #expect(!secrets.contains { text.contains($0) }, "\(event.type)")
                    }
                }
            }
        }
    }

    /// Has the emulator send Apple's notification of `type` about `email`; the server's status.
    private func notify(_ server: ServerHarness, _ type: String, to email: String) async throws -> Int? {
        let answer = try await server.emulator(
            "/emulator/notifications",
            ["clientId": LifecycleHarness.bundleID, "email": email, "type": type]
        )
        return answer["receiverStatus"] as? Int
    }

    /// The events of one type, newest first.
    private func events(_ store: any AccountStore, _ type: AuditEventType) async throws -> [AuditEvent] {
        try await store.auditEvents(AuditEventFilter(types: [type]), limit: 100, after: nil).items
    }
}
