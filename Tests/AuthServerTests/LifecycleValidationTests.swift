import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The periodic validation of users' Apple refresh tokens: in the background and on `POST /auth/refresh`.
@Suite("Lifecycle: Apple token validation")
struct LifecycleValidationTests {
    @Test func theValidationJobEndsSessionsOfAConsentRevokedAtApple() async throws {
        // No notification URL: only validation can tell siwa.
        try await LifecycleHarness.run(notifications: false) { lifecycle in
            let configuration = LifecycleHarness.configuration { $0.appleValidationPollInterval = .milliseconds(100) }
            try await lifecycle.withServer(configuration) { server in
                let signIn = try await server.signIn("job@example.com")
                let keeper = try await server.signIn("kept@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                let keeperID = try #require(keeper.json.user.string("id").flatMap(UserID.init))
                try await server.emulator(
                    "/emulator/revoke-consent",
                    ["clientId": LifecycleHarness.bundleID, "email": "job@example.com"]
                )
                try await overdue(lifecycle, userID)
                try await overdue(lifecycle, keeperID)

                let access = signIn.json.string("accessToken")
                let ended = try await lifecycle.eventually {
                    try await server.call(.get, "/api/me", bearer: access).status == .unauthorized
                }
                #expect(ended)
                let refresh = try await server.call(
                    .post,
                    "/auth/refresh",
                    json: ["refreshToken": try #require(signIn.json.string("refreshToken"))]
                )
                #expect(refresh.json.string("error") == "apple_consent_revoked")
                #expect(try await lifecycle.store.user(id: userID)?.appleConsentRevokedAt != nil)
                // siwa's own check found it: the session ended by the system, the consent named as the reason.
                let endedEvents = try await lifecycle.store.auditEvents(
                    AuditEventFilter(userID: userID, types: [.sessionEnded]),
                    limit: 10,
                    after: nil
                ).items
                #expect(endedEvents.count == 1)
                #expect(endedEvents.first?.actor == .system)
                #expect(endedEvents.first?.reason == "apple_consent_revoked")
                // The other user's token was valid: validated, sessions untouched.
                #expect(try await lifecycle.eventually { try await validations(lifecycle) == 2 })
                #expect(try await server.call(.get, "/api/me", bearer: keeper.json.string("accessToken")).status == .ok)
                let kept = try await lifecycle.store.appleToken(userID: keeperID)
                #expect(kept?.lastValidatedAt.map { $0 >= lifecycle.clock.now.addingTimeInterval(-60) } == true)
            }
        }
    }

    @Test func aRefreshValidatesAnOverdueTokenInline() async throws {
        try await LifecycleHarness.run(notifications: false) { lifecycle in
            try await lifecycle.withServer { server in
                let fresh = try await server.signIn("fresh@example.com")
                #expect(try await refresh(server, fresh.json).status == .ok)
                #expect(try await validations(lifecycle) == 0)  // validated at sign-in, not due

                let valid = try await server.signIn("inline@example.com")
                try await overdue(lifecycle, try #require(valid.json.user.string("id").flatMap(UserID.init)))
                let first = try await refresh(server, valid.json)
                #expect(first.status == .ok)
                #expect(try await validations(lifecycle) == 1)
                #expect(try await refresh(server, first.json).status == .ok)
                #expect(try await validations(lifecycle) == 1)  // once per interval

                let revoked = try await server.signIn("inline-revoked@example.com")
                let revokedID = try #require(revoked.json.user.string("id").flatMap(UserID.init))
                try await server.emulator(
                    "/emulator/revoke-consent",
                    ["clientId": LifecycleHarness.bundleID, "email": "inline-revoked@example.com"]
                )
                try await overdue(lifecycle, revokedID)
                let refused = try await refresh(server, revoked.json)
                #expect(refused.status == .unauthorized)
                #expect(refused.json.string("error") == "apple_consent_revoked")
                let me = try await server.call(.get, "/api/me", bearer: revoked.json.string("accessToken"))
                #expect(me.status == .unauthorized)
            }
        }
    }

    @Test func racingRefreshesOnTwoInstancesMakeOneValidationCall() async throws {
        try await LifecycleHarness.run(notifications: false) { lifecycle in
            try await lifecycle.withServer { first in
                try await lifecycle.withServer { second in
                    var sessions: [[String: Any]] = []
                    for _ in 0..<20 { sessions.append(try await first.signIn("race@example.com").json) }
                    let userID = try #require(sessions[0].user.string("id").flatMap(UserID.init))
                    try await overdue(lifecycle, userID)
                    let tokens = sessions.compactMap { $0.string("refreshToken") }
                    let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                        for (index, token) in tokens.enumerated() {
                            let server = index.isMultiple(of: 2) ? first : second
                            group.addTask {
                                try await server.call(.post, "/auth/refresh", json: ["refreshToken": token]).status
                            }
                        }
                        var statuses: [HTTPResponse.Status] = []
                        for try await status in group { statuses.append(status) }
                        return statuses
                    }
                    #expect(statuses.count == 20)
                    #expect(statuses.allSatisfy { $0 == .ok })
                    #expect(try await validations(lifecycle) == 1)
                }
            }
        }
    }

    @Test func appleUnreachableAllowsTheRefreshByDefault() async throws {
        try await LifecycleHarness.run(notifications: false) { lifecycle in
            try await lifecycle.withServer { server in
                let signIn = try await server.signIn("down@example.com")
                let userID = try #require(signIn.json.user.string("id").flatMap(UserID.init))
                try await overdue(lifecycle, userID)
                try await server.emulator("/emulator/faults", ["endpoint": "token", "mode": "error"])
                let answer = try await refresh(server, signIn.json)
                #expect(answer.status == .ok)
                #expect(try await server.call(.get, "/api/me", bearer: answer.json.string("accessToken")).status == .ok)
                // Tried again after the retry delay, not at once.
                let retryAt = try #require(try await lifecycle.store.appleToken(userID: userID)?.lastValidatedAt)
                #expect(retryAt < lifecycle.clock.now)
                #expect(retryAt > lifecycle.clock.now.addingTimeInterval(-3600))
            }
        }
    }

    @Test func appleUnreachableRefusesTheRefreshWhenConfigured() async throws {
        try await LifecycleHarness.run(notifications: false) { lifecycle in
            let configuration = LifecycleHarness.configuration { $0.refuseRefreshWhenAppleUnavailable = true }
            try await lifecycle.withServer(configuration) { server in
                let signIn = try await server.signIn("strict@example.com")
                try await overdue(lifecycle, try #require(signIn.json.user.string("id").flatMap(UserID.init)))
                try await server.emulator("/emulator/faults", ["endpoint": "token", "mode": "error"])
                let refused = try await refresh(server, signIn.json)
                #expect(refused.status == .serviceUnavailable)
                #expect(refused.json.string("error") == "apple_unavailable")
                // The sessions stay, and the refused refresh did not use the token up.
                #expect(try await server.call(.get, "/api/me", bearer: signIn.json.string("accessToken")).status == .ok)
                try await server.emulator("/emulator/faults", ["endpoint": "token", "mode": "off"])
                #expect(try await refresh(server, signIn.json).status == .ok)
            }
        }
    }

    // MARK: Helpers

    /// Makes the user's Apple token due for validation (last validated two intervals ago).
    private func overdue(_ lifecycle: LifecycleHarness, _ userID: UserID) async throws {
        try await lifecycle.store.setAppleTokenValidated(
            userID: userID,
            at: lifecycle.clock.now.addingTimeInterval(-7200)
        )
    }

    /// Validation calls at Apple so far (refresh grants, whatever Apple answered).
    private func validations(_ lifecycle: LifecycleHarness) async throws -> Int {
        try await lifecycle.emulatorCalls("token", grantType: "refresh_token")
    }

    private func refresh(
        _ server: ServerHarness,
        _ session: [String: Any]
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let answer = try await server.call(
            .post,
            "/auth/refresh",
            json: ["refreshToken": session.string("refreshToken") ?? ""]
        )
        return (answer.status, answer.json)
    }
}
