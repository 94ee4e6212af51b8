import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// What the emulator offers for testing that a server refuses: tokens for another app's client id, and notifications
/// sent again byte for byte.
@Suite("Emulator: tokens for unregistered client ids, notification redelivery")
struct RefusalToolsTests {
    static let strangerID: ClientID = "com.stranger.app"

    @Test func anUnregisteredClientIDGetsATokenSignedByTheEmulatorForIt() async throws {
        try await EmulatorHarness.run { emulator in
            let registered = try await emulator.nativeSignIn("mint@example.com")
            let credential = try await emulator.nativeSignIn("mint@example.com", clientID: Self.strangerID)
            let token = try #require(credential["identityToken"] as? String)

            // The emulator's key signed it (verified against its JWKS), for exactly the asked client id, with the
            // user's sub at the first team: only `aud` tells it from the registered app's token.
            let stranger = try await emulator.verifier(try emulator.configuration(bundleIDs: [Self.strangerID]))
                .verify(token)
            #expect(stranger.aud == Self.strangerID)
            #expect(stranger.sub.rawValue == registered["user"] as? String)
            await #expect(throws: AppleSignInError.audienceMismatch(got: Self.strangerID.rawValue)) {
                try await emulator.verifier().verify(token)
            }

            let signIns = try await emulator.log().filter { $0["endpoint"] as? String == "native-sign-in" }
            try #require(signIns.count == 2)
            #expect(signIns[0]["outcome"] as? String == "200")
            #expect(signIns[0]["unregisteredClient"] == nil)
            #expect(signIns[1]["clientID"] as? String == Self.strangerID.rawValue)
            #expect(signIns[1]["outcome"] as? String == "200 (unregistered client id)")
            #expect(signIns[1]["unregisteredClient"] as? Bool == true)

            // The registered team's consent is untouched, and the stranger's code is no good at the token endpoint.
            let again = try await emulator.nativeSignIn("mint@example.com")
            #expect(again["email"] is NSNull)
            await #expect(throws: AppleSignInError.invalidClient) {
                try await emulator.client(try emulator.configuration(bundleIDs: [Self.strangerID])).exchange(
                    code: try #require(credential["authorizationCode"] as? String),
                    for: stranger
                )
            }
        }
    }

    @Test func aRedeliveryPostsTheSameBytesToTheSameReceiver() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("again@example.com", hideEmail: true)
            let sent = try await emulator.notify("again@example.com", "email-disabled")
            #expect(sent.status == 200)
            let id = try #require(sent.json["id"] as? String)

            let list = try await emulator.sentNotifications()
            try #require(list.count == 1)
            #expect(list[0]["id"] as? String == id)
            #expect(list[0]["type"] as? String == "email-disabled")
            #expect(list[0]["clientId"] as? String == "com.example.app")
            #expect((list[0]["sub"] as? String)?.isEmpty == false)
            #expect(list[0]["sentAt"] is String)

            emulator.clock.advance(by: 120)  // a redelivery is not signed again: the same event time, the same jti
            let again = try await emulator.control("notifications/\(id)/redeliver", [:])
            #expect(again.status == 200)
            #expect(again.json["delivered"] as? Bool == true)
            #expect(again.json["receiverStatus"] as? Int == 200)
            #expect(again.json["type"] as? String == "email-disabled")
            let bodies = emulator.notifications.all
            try #require(bodies.count == 2)
            #expect(bodies[1] == bodies[0])
            #expect(try await emulator.verifier().verifyNotification(body: bodies[1]).event.type == .emailDisabled)
            let redelivery = "email-disabled (redelivery of \(id)): receiver answered 200"
            #expect(try await emulator.log().contains { $0["outcome"] as? String == redelivery })

            let unknown = try await emulator.control("notifications/nosuchid/redeliver", [:])
            #expect(unknown.status == 404)
            #expect(unknown.json["error"] as? String == "unknown_notification")
            #expect(emulator.notifications.all.count == 2)
        }
    }

    @Test func anAccountDeleteCanBeRedeliveredAfterTheAppleIDIsGone() async throws {
        try await EmulatorHarness.run { emulator in
            let credential = try await emulator.nativeSignIn("deleted@example.com")
            let sent = try await emulator.notify("deleted@example.com", "account-delete")
            let id = try #require(sent.json["id"] as? String)
            let resend = try await emulator.notify("deleted@example.com", "account-delete")
            #expect(resend.status == 404)  // the Apple ID is gone: it cannot be signed again

            let again = try await emulator.control("notifications/\(id)/redeliver", [:])
            #expect(again.status == 200)
            #expect(again.json["receiverStatus"] as? Int == 200)
            let bodies = emulator.notifications.all
            try #require(bodies.count == 2)
            #expect(bodies[1] == bodies[0])
            let event = try await emulator.verifier().verifyNotification(body: bodies[1]).event
            #expect(event.type == .accountDelete)
            #expect(event.sub.rawValue == credential["user"] as? String)
        }
    }

    @Test func onlyTheLastHundredNotificationsAreKept() async throws {
        try await EmulatorHarness.run { emulator in
            _ = try await emulator.nativeSignIn("many@example.com")
            var ids: [String] = []
            for index in 0..<101 {
                let type = index.isMultiple(of: 2) ? "email-disabled" : "email-enabled"
                let sent = try await emulator.notify("many@example.com", type)
                ids.append(try #require(sent.json["id"] as? String))
            }
            let kept = try await emulator.sentNotifications().compactMap { $0["id"] as? String }
            #expect(kept == Array(ids.dropFirst()))
            #expect(try await emulator.control("notifications/\(ids[0])/redeliver", [:]).status == 404)
            #expect(try await emulator.control("notifications/\(ids[1])/redeliver", [:]).status == 200)
        }
    }

    @Test func keptNotificationsSurviveARestartAndOldStateFilesStillLoad() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-emu-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stateURL = directory.appendingPathComponent("state.json")
        let stateFile = stateURL.path
        let teamKey = P256.Signing.PrivateKey()
        let clock = ManualWallClock(Date())
        let first = Captured()
        try await EmulatorHarness.run(stateFile: stateFile, teamKey: teamKey, clock: clock) { emulator in
            let credential = try await emulator.nativeSignIn("kept@example.com")
            let sent = try await emulator.notify("kept@example.com", "account-delete")
            first.set(
                id: try #require(sent.json["id"] as? String),
                url: emulator.receiverURL,
                body: try #require(emulator.notifications.all.first),
                sub: try #require(credential["user"] as? String)
            )
        }
        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateURL)) as? [String: Any])
        let kept = try #require((saved["sentNotifications"] as? [[String: Any]])?.first)
        #expect(kept["body"] as? String == Data(first.body).base64EncodedString())
        try await EmulatorHarness.run(stateFile: stateFile, teamKey: teamKey, clock: clock) { emulator in
            #expect(try await emulator.sentNotifications().map { $0["id"] as? String } == [first.id])
            // To the same URL: the first run's receiver, gone with it (unless this run's receiver got its port back).
            let again = try await emulator.control("notifications/\(first.id)/redeliver", [:])
            if again.status == 200 {
                #expect(emulator.notifications.all == [first.body])
            } else {
                #expect(again.status == 502)
                #expect(again.json["message"] as? String == "could not reach \(first.url)")
            }
        }

        // A state file of an emulator from before redelivery (no `sentNotifications`) loads.
        var old = saved
        old["sentNotifications"] = nil
        try JSONSerialization.data(withJSONObject: old).write(to: stateURL)
        try await EmulatorHarness.run(stateFile: stateFile, teamKey: teamKey, clock: clock) { emulator in
            #expect(try await emulator.sentNotifications().isEmpty)
            let credential = try await emulator.nativeSignIn("kept@example.com")
            #expect(credential["user"] as? String != first.sub)  // the deleted Apple ID stayed deleted
        }
    }
}

/// What the first of two emulator runs sent, for the second.
final class Captured: @unchecked Sendable {
    // Written once by the first run and read by the second, which starts after the first has finished.
    private(set) var id = ""
    private(set) var url = ""
    private(set) var body: [UInt8] = []
    private(set) var sub = ""

    func set(id: String, url: String, body: [UInt8], sub: String) {
        self.id = id
        self.url = url
        self.body = body
        self.sub = sub
    }
}
