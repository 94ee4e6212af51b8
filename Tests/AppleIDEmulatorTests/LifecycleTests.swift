import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// Notifications, consent, key rotation, faults, team transfer and state across restarts.
@Suite("Emulator: notifications, keys, faults, transfer, state")
struct LifecycleTests {
    @Test func notificationsAreSignedLikeAppleAndDelivered() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("notify@example.com", hideEmail: true)
            let verifier = try emulator.verifier()
            for type in ["email-disabled", "email-enabled"] {
                let answer = try await emulator.control(
                    "notifications",
                    ["clientId": "com.example.app", "email": "notify@example.com", "type": type]
                )
                #expect(answer.status == 200)
                #expect(answer.json["receiverStatus"] as? Int == 200)
            }
            let bodies = emulator.notifications.all
            try #require(bodies.count == 2)
            let disabled = try await verifier.verifyNotification(body: bodies[0])
            #expect(disabled.event.type == .emailDisabled)
            #expect(disabled.event.sub.rawValue == credential["user"] as? String)
            #expect(disabled.event.email == credential["email"] as? String)
            #expect(disabled.event.isPrivateEmail == true)
            #expect(abs(disabled.event.eventTime.timeIntervalSince(emulator.clock.now)) < 2)
            #expect(try await verifier.verifyNotification(body: bodies[1]).event.type == .emailEnabled)
            let raw = try #require(JSONSerialization.jsonObject(with: Data(bodies[0])) as? [String: String])
            #expect(raw.keys.sorted() == ["payload"])

            let unknown = try await emulator.control(
                "notifications",
                ["clientId": "com.example.app", "email": "nobody@example.com", "type": "email-disabled"]
            )
            #expect(unknown.status == 404)
            let badType = try await emulator.control(
                "notifications",
                ["clientId": "com.example.app", "email": "notify@example.com", "type": "something"]
            )
            #expect(badType.status == 400)
        }
    }

    @Test func revokingConsentKillsRefreshTokensNotifiesAndResetsFirstAuthorization() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("consent@example.com", givenName: "Con")
            let token = try await emulator.verifier().verify(try #require(credential["identityToken"] as? String))
            let apple = try emulator.client()
            let code = try #require(credential["authorizationCode"] as? String)
            let refreshToken = try #require(try await apple.exchange(code: code, for: token).refreshToken)
            let answer = try await emulator.control(
                "revoke-consent",
                ["clientId": "com.example.app", "email": "consent@example.com"]
            )
            #expect(answer.status == 200)
            guard case .revoked = try await apple.validate(refreshToken: refreshToken, clientID: token.aud) else {
                Issue.record("refresh token must be dead after consent is revoked")
                return
            }
            let notification = try await emulator.verifier().verifyNotification(
                body: try #require(emulator.notifications.all.last)
            )
            #expect(notification.event.type == .consentRevoked)
            #expect(notification.event.sub == token.sub)
            let again = try await emulator.nativeSignIn("consent@example.com")
            #expect(again["email"] as? String == "consent@example.com")  // a first authorization again
            #expect(again["user"] as? String == credential["user"] as? String)
        }
    }

    @Test func accountDeleteRemovesTheAppleID() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("gone@example.com")
            let answer = try await emulator.control(
                "notifications",
                ["clientId": "com.example.app", "email": "gone@example.com", "type": "account-delete"]
            )
            #expect(answer.status == 200)
            let notification = try await emulator.verifier().verifyNotification(
                body: try #require(emulator.notifications.all.last)
            )
            #expect(notification.event.type == .accountDelete)
            #expect(notification.event.sub.rawValue == credential["user"] as? String)
            let reborn = try await emulator.nativeSignIn("gone@example.com")
            #expect(reborn["user"] as? String != credential["user"] as? String)
        }
    }

    @Test func rotatedKeysAreFetchedOnUnknownKidAndOldOnesKeepVerifyingDuringGrace() async throws {
        try await EmulatorHarness.run { emulator in
            let keys = emulator.keys()
            let verifier = try emulator.verifier(keys: keys)
            let before = try await emulator.nativeSignIn("rotate@example.com")
            let oldToken = try #require(before["identityToken"] as? String)
            _ = try await verifier.verify(oldToken)
            #expect(keys.fetchCount == 1)

            let rotation = try await emulator.control("rotate-keys", [:])
            let newKid = try #require(rotation.json["kid"] as? String)
            let after = try await emulator.nativeSignIn("rotate@example.com")
            let newToken = try await verifier.verify(try #require(after["identityToken"] as? String))
            #expect(keys.fetchCount == 2)  // one refetch for the unknown kid
            #expect(keys.keyIDs.contains(newKid))
            #expect(keys.keyIDs.count == 2)
            #expect(newToken.sub.rawValue == before["user"] as? String)
            _ = try await verifier.verify(oldToken)  // still published during the grace period

            emulator.clock.advance(by: 601)  // past the grace period: the old key leaves the set
            let fresh = emulator.keys()
            await #expect(throws: AppleSignInError.unknownKey) {
                try await emulator.verifier(keys: fresh).verify(oldToken)
            }
            #expect(fresh.keyIDs == [newKid])
        }
    }

    @Test func faultModesFailOrHangTheChosenEndpoint() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("faults@example.com")
            let idToken = try #require(credential["identityToken"] as? String)
            #expect(
                try await emulator.control("faults", ["endpoint": "keys", "mode": "error", "count": 1]).status == 200
            )
            await #expect(throws: AppleSignInError.keysUnavailable) { try await emulator.verifier().verify(idToken) }
            let token = try await emulator.verifier().verify(idToken)  // count 1: the next call works

            _ = try await emulator.control("faults", ["endpoint": "token", "mode": "error"])
            let apple = try emulator.client()
            let code = try #require(credential["authorizationCode"] as? String)
            await #expect(throws: AppleSignInError.appleServerError) {
                try await apple.exchange(code: code, for: token)
            }
            await #expect(throws: AppleSignInError.appleServerError) {
                try await apple.exchange(code: code, for: token)
            }
            _ = try await emulator.control("faults", ["endpoint": "token", "mode": "off"])
            let tokens = try await apple.exchange(code: code, for: token)

            _ = try await emulator.control("faults", ["endpoint": "revoke", "mode": "timeout", "count": 1])
            let impatient = try emulator.client(
                retry: RetryPolicy(maximumAttempts: 1, initialDelay: .zero, timeout: .milliseconds(300))
            )
            let clock = ContinuousClock()
            let start = clock.now
            await #expect(throws: AppleSignInError.timeout) {
                try await impatient.revoke(token: try #require(tokens.refreshToken), clientID: token.aud)
            }
            // The client's own 300 ms timeout ended the call, not the emulator, which hangs for 30 s: a bound far from
            // both, so that a loaded machine cannot make it fail.
            #expect(clock.now - start < .seconds(15), "the client gave up on its own timeout")
            try await apple.revoke(token: try #require(tokens.refreshToken), clientID: token.aud)

            let bad = try await emulator.control("faults", ["endpoint": "authorize", "mode": "error"])
            #expect(bad.status == 400)
            let log = try await emulator.log()
            #expect(log.contains { $0["outcome"] as? String == "fault: 500" && $0["endpoint"] as? String == "keys" })
            #expect(
                log.contains { $0["outcome"] as? String == "fault: timeout" && $0["endpoint"] as? String == "revoke" }
            )
        }
    }

    /// A key revoked in the developer portal: Apple refuses every client secret with a bare `invalid_client` until the
    /// fault is turned off, and the code the refused call carried is still unused.
    @Test func invalidClientFaultRefusesAsARevokedKeyDoes() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("revoked-key@example.com")
            let token = try await emulator.verifier().verify(try #require(credential["identityToken"] as? String))
            let code = try #require(credential["authorizationCode"] as? String)
            let apple = try emulator.client()
            _ = try await emulator.control("faults", ["endpoint": "token", "mode": "invalid_client"])
            await #expect(throws: AppleSignInError.invalidClient) { try await apple.exchange(code: code, for: token) }
            _ = try await emulator.control("faults", ["endpoint": "token", "mode": "off"])
            let tokens = try await apple.exchange(code: code, for: token)

            _ = try await emulator.control("faults", ["endpoint": "revoke", "mode": "invalid_client", "count": 1])
            let refreshToken = try #require(tokens.refreshToken)
            await #expect(throws: AppleSignInError.invalidClient) {
                try await apple.revoke(token: refreshToken, clientID: token.aud)
            }
            try await apple.revoke(token: refreshToken, clientID: token.aud)
            let log = try await emulator.log()
            #expect(
                log.contains {
                    $0["outcome"] as? String == "fault: invalid_client" && $0["endpoint"] as? String == "revoke"
                }
            )
        }
    }

    @Test func teamTransferMapsUsersToTheReceivingTeam() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("moving@example.com", hideEmail: true)
            let oldSub = try #require(credential["user"] as? String)
            // Sending team: a migration access token, then sub + target -> transfer_sub.
            let sending = try emulator.configuration()
            let secret = ClientSecretFactory(credentials: sending.credentials!, lifetime: 3600, clock: emulator.clock)
                .secret(for: EmulatorHarness.bundleID).token
            let form = "application/x-www-form-urlencoded"
            let grant = try await emulator.send(
                .post,
                "/auth/token",
                body:
                    "grant_type=client_credentials&scope=user.migration&client_id=com.example.app&client_secret=\(secret)",
                contentType: form
            )
            #expect(grant.status == 200)
            let accessToken = try #require(
                (try JSONSerialization.jsonObject(with: Data(grant.body.utf8)) as? [String: Any])?["access_token"]
                    as? String
            )
            let export = try await emulator.send(
                .post,
                "/auth/usermigrationinfo",
                body:
                    "sub=\(oldSub)&target=\(EmulatorHarness.otherTeamID)&client_id=com.example.app&client_secret=\(secret)",
                contentType: form,
                headers: [.authorization: "Bearer \(accessToken)"]
            )
            #expect(export.status == 200)
            let transferSub = try #require(
                (try JSONSerialization.jsonObject(with: Data(export.body.utf8)) as? [String: String])?["transfer_sub"]
            )
            let unauthorized = try await emulator.send(
                .post,
                "/auth/usermigrationinfo",
                body:
                    "sub=\(oldSub)&target=\(EmulatorHarness.otherTeamID)&client_id=com.example.app&client_secret=\(secret)",
                contentType: form
            )
            #expect(unauthorized.status == 401)

            // Receiving team: its own migration token, then transfer_sub -> the new sub and email.
            let receiving = try emulator.configuration(
                teamID: EmulatorHarness.otherTeamID,
                keyID: EmulatorHarness.otherKeyID,
                key: emulator.otherTeamKey,
                bundleIDs: [EmulatorHarness.otherTeamBundleID]
            )
            let receivingSecret = ClientSecretFactory(
                credentials: receiving.credentials!,
                lifetime: 3600,
                clock: emulator.clock
            )
            .secret(for: EmulatorHarness.otherTeamBundleID).token
            let receivingGrant = try await emulator.send(
                .post,
                "/auth/token",
                body:
                    "grant_type=client_credentials&scope=user.migration&client_id=org.other.app&client_secret=\(receivingSecret)",
                contentType: form
            )
            let receivingToken = try #require(
                (try JSONSerialization.jsonObject(with: Data(receivingGrant.body.utf8)) as? [String: Any])?[
                    "access_token"
                ]
                    as? String
            )
            let imported = try await emulator.send(
                .post,
                "/auth/usermigrationinfo",
                body: "transfer_sub=\(transferSub)&client_id=org.other.app&client_secret=\(receivingSecret)",
                contentType: form,
                headers: [.authorization: "Bearer \(receivingToken)"]
            )
            #expect(imported.status == 200)
            let moved = try #require(
                try JSONSerialization.jsonObject(with: Data(imported.body.utf8)) as? [String: String]
            )
            let newSub = try #require(moved["sub"])
            #expect(newSub != oldSub)
            #expect(moved["email"]?.hasSuffix("@privaterelay.appleid.com") == true)

            // Signing in to the receiving team's app now carries transfer_sub, and the sub matches the import.
            let after = try await emulator.nativeSignIn(
                "moving@example.com",
                clientID: EmulatorHarness.otherTeamBundleID
            )
            let token = try await emulator.verifier(receiving).verify(try #require(after["identityToken"] as? String))
            #expect(token.sub.rawValue == newSub)
            #expect(token.transferSub?.rawValue == transferSub)
        }
    }

    @Test func stateFileKeepsUsersKeysAndTokensAcrossRestarts() async throws {
        try await withTemporaryFolder("siwa-emu") { folder in
            let stateFile = folder.url.appendingPathComponent("state.json").path
            let teamKey = P256.Signing.PrivateKey()
            let clock = ManualWallClock(Date())
            let remembered = Remembered()
            try await EmulatorHarness.run(stateFile: stateFile, teamKey: teamKey, clock: clock) { emulator in
                let credential = try await emulator.nativeSignIn("persist@example.com", givenName: "Per")
                let token = try await emulator.verifier().verify(try #require(credential["identityToken"] as? String))
                let tokens = try await emulator.client().exchange(
                    code: try #require(credential["authorizationCode"] as? String),
                    for: token
                )
                remembered.set(
                    sub: token.sub.rawValue,
                    refreshToken: try #require(tokens.refreshToken),
                    token: credential["identityToken"] as! String
                )
            }
            // The state holds the emulator's private keys: readable by its owner only.
            let mode = try FileManager.default.attributesOfItem(atPath: stateFile)[.posixPermissions] as? Int
            #expect(mode == 0o600, "the state file is 0600, not \(String(mode ?? 0, radix: 8))")
            try await EmulatorHarness.run(stateFile: stateFile, teamKey: teamKey, clock: clock) { emulator in
                let again = try await emulator.nativeSignIn("persist@example.com")
                #expect(again["user"] as? String == remembered.sub)
                #expect(again["email"] is NSNull)  // not a first authorization any more
                _ = try await emulator.verifier().verify(remembered.token)  // same signing key
                guard
                    case .valid = try await emulator.client().validate(
                        refreshToken: remembered.refreshToken,
                        clientID: EmulatorHarness.bundleID
                    )
                else {
                    Issue.record("the refresh token must survive a restart")
                    return
                }
            }
        }
    }
}

/// Values carried from one emulator run to the next.
final class Remembered: @unchecked Sendable {
    // Written once by the first run and read by the second, which starts after the first has finished.
    private(set) var sub = ""
    private(set) var refreshToken = ""
    private(set) var token = ""

    func set(sub: String, refreshToken: String, token: String) {
        self.sub = sub
        self.refreshToken = refreshToken
        self.token = token
    }
}
