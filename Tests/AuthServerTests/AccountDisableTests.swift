import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Testing

/// An account an operator disabled (`siwa users disable`, another process on the shared store): refused everywhere.
@Suite("Server: disabled accounts")
struct AccountDisableTests {
    @Test func aDisabledAccountIsRefusedUntilEnabled() async throws {
        try await ServerHarness.run { harness in
            let signIn = try await harness.signIn("disabled@example.com")
            #expect(signIn.status == .ok)
            let access = try #require(signIn.json.string("accessToken"))
            let refreshToken = try #require(signIn.json.string("refreshToken"))
            let id = try #require(signIn.json.user.string("id"))
            let userID = try #require(UserID(id))
            #expect(try await harness.call(.get, "/api/me", bearer: access).status == .ok, "the cache holds the user")

            let disabled = try #require(try await statusService(harness).disable(userID))
            #expect(disabled.endedSessions.count == 1)

            // The running server learns of it at its next store refresh: the access token stops working.
            var me = try await harness.call(.get, "/api/me", bearer: access)
            for _ in 0..<50 where me.status == .ok {
                try await Task.sleep(for: .milliseconds(100))
                me = try await harness.call(.get, "/api/me", bearer: access)
            }
            #expect(me.status == .unauthorized)
            #expect(me.json.string("error") == "session_revoked")

            let refresh = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
            #expect(refresh.status == .forbidden)
            #expect(refresh.json.string("error") == "account_disabled")

            let again = try await harness.signIn("disabled@example.com")
            #expect(again.status == .forbidden)
            #expect(again.json.string("error") == "account_disabled")
            #expect((again.json.string("message") ?? "").contains("disabled"))
            #expect(again.json.string("accessToken") == nil)
            #expect(
                try await harness.store.revokedSessions(since: .distantPast).count == 1,
                "the refused sign-in started no session"
            )

            #expect(try await statusService(harness).enable(userID)?.isDisabled == false)
            let enabled = try await harness.signIn("disabled@example.com")
            #expect(enabled.status == .ok)
            #expect(enabled.json.user.string("id") == userID.description, "the same account")
            let newAccess = try #require(enabled.json.string("accessToken"))
            #expect(try await harness.call(.get, "/api/me", bearer: newAccess).status == .ok)
            let newRefresh = try #require(enabled.json.string("refreshToken"))
            #expect(try await harness.call(.post, "/auth/refresh", json: ["refreshToken": newRefresh]).status == .ok)
        }
    }

    /// Each client contract answers in its own envelope, with 403 `account_disabled`.
    @Test func everyContractRefusesADisabledAccountInItsEnvelope() async throws {
        try await ServerHarness.run(configuration: CompatibilityTests.configuration()) { harness in
            let rentToken = try await identityToken(harness, "contracts@example.com")
            let rent = try await CompatibilityTests.send(
                harness,
                .post,
                "/api/auth/apple",
                body: try CompatibilityTests.jsonText(["identityToken": rentToken])
            )
            #expect(rent.status == .ok)
            let refreshToken = try #require(rent.json["refreshToken"] as? String)
            let id = try #require((rent.json["user"] as? [String: Any])?["id"] as? String)
            let userID = try #require(UserID(id))
            try #require(try await statusService(harness).disable(userID) != nil)

            let rentAgain = try await CompatibilityTests.send(
                harness,
                .post,
                "/api/auth/apple",
                body: try CompatibilityTests.jsonText([
                    "identityToken": try await identityToken(harness, "contracts@example.com")
                ])
            )
            #expect(rentAgain.status == .forbidden)
            #expect(rentAgain.json["success"] as? Bool == false)
            #expect(rentAgain.json["error"] as? String == "account_disabled")
            // RentManager's refresh does not rotate: the check path answers the same.
            let rentRefresh = try await CompatibilityTests.send(
                harness,
                .post,
                "/api/auth/refresh",
                body: try CompatibilityTests.jsonText(["refreshToken": refreshToken])
            )
            #expect(rentRefresh.status == .forbidden)
            #expect(rentRefresh.json["error"] as? String == "account_disabled")

            let vapor = try await CompatibilityTests.send(
                harness,
                .post,
                "/api/auth/siwa",
                body: try CompatibilityTests.jsonText([
                    "appleIdentityToken": try await identityToken(harness, "contracts@example.com")
                ])
            )
            #expect(vapor.status == .forbidden)
            #expect(vapor.json["error"] as? Bool == true)
            #expect(vapor.json["code"] as? String == "account_disabled")
        }
    }

    /// The web flow's callback shows the error page, with the code, for a disabled account.
    @Test func theWebFlowShowsAnErrorPageForADisabledAccount() async throws {
        try await ServerHarness.run(configuration: WebSignInTests.configuration(), web: true) { harness in
            let first = try await harness.webSignIn(email: "webdisabled@example.com")
            #expect(first.status == .seeOther)
            let user = try #require(try await harness.store.users(limit: 10, after: nil).first)
            try #require(try await statusService(harness).disable(user.id) != nil)

            let refused = try await harness.webSignIn(email: "webdisabled@example.com")
            #expect(refused.status == .forbidden)
            #expect(refused.body.contains("account_disabled"))
            #expect(refused.body.contains("Sign-in failed"))
            #expect(refused.cookie("siwa_session") == nil)
        }
    }

    private func identityToken(_ harness: ServerHarness, _ email: String) async throws -> String {
        try #require(try await harness.appleCredential(email)["identityToken"] as? String)
    }

    private func statusService(_ harness: ServerHarness) -> AccountStatusService {
        AccountStatusService(store: harness.store, clock: harness.clock, logger: Logger(label: "test"))
    }
}
