import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

@testable import AuthServer

/// Webhook signatures as the Standard Webhooks specification defines them, checked against its own test vector and
/// its reference library.
@Suite("Webhook signatures")
struct WebhookSignatureTests {
    static let python = PythonClientScript.python
    static let script = PythonClientScript("standard_webhooks.py")

    /// A secret of `count` random bytes, as an operator's configuration writes it.
    static func secretText(bytes count: Int = 32) -> String {
        "whsec_" + Data((0..<count).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    /// The specification's libraries' own vector: this secret, id, time and body sign to exactly this.
    @Test func theSpecificationsVectorSignsAsTheReferenceDoes() throws {
        let secret = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let headers = WebhookSignature.headers(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
            timestamp: Date(timeIntervalSince1970: 1_614_265_330.9),
            body: Array(#"{"test": 2432232314}"#.utf8),
            secrets: [secret]
        )
        #expect(headers[.webhookID] == "msg_p5jXN8AQM9LWM0D4loKWxJek")
        #expect(headers[.webhookTimestamp] == "1614265330", "whole seconds, rounded down")
        #expect(headers[.webhookSignature] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    /// During a rotation both secrets sign, each signature its own, separated by a space; a changed body, id or
    /// time signs differently.
    @Test func twoSecretsSignOneDeliveryTwice() throws {
        let old = try WebhookSecret(Self.secretText())
        let new = try WebhookSecret(Self.secretText())
        let body = Array(#"{"type":"user.deleted"}"#.utf8)
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        let both = WebhookSignature.headers(id: "evt_1", timestamp: time, body: body, secrets: [old, new])
        let alone = [old, new].map {
            WebhookSignature.headers(id: "evt_1", timestamp: time, body: body, secrets: [$0])[.webhookSignature]
        }
        #expect(both[.webhookSignature] == alone.compactMap { $0 }.joined(separator: " "))
        #expect(alone[0] != alone[1])
        let changed = [
            WebhookSignature.headers(id: "evt_1", timestamp: time, body: body + [0x20], secrets: [old]),
            WebhookSignature.headers(id: "evt_2", timestamp: time, body: body, secrets: [old]),
            WebhookSignature.headers(id: "evt_1", timestamp: time + 1, body: body, secrets: [old]),
        ]
        for headers in changed { #expect(headers[.webhookSignature] != alone[0]) }
    }

    /// A secret that is not `whsec_` and 24 to 64 bytes of base64 is refused, saying why and never echoing it.
    @Test func aSecretThatIsNotTheSpecificationsIsRefusedSayingWhy() throws {
        let cases: [(String, String)] = [
            (String(Self.secretText().dropFirst(6)), "does not start with whsec_"),
            ("whsec_not base64!", "is not base64"),
            (Self.secretText(bytes: 23), "23 bytes"),
            (Self.secretText(bytes: 65), "65 bytes"),
        ]
        for (text, reason) in cases {
            #expect {
                try WebhookSecret(text)
            } throws: { error in
                let message = String(describing: error)
                return message.contains(reason) && !message.contains(String(text.dropFirst(6)))
            }
        }
        for size in [24, 64] { #expect(throws: Never.self) { try WebhookSecret(Self.secretText(bytes: size)) } }
        #expect(!String(describing: try WebhookSecret(Self.secretText())).contains("="), "the key is never printed")
    }

    /// The Standard Webhooks reference library (PyPI's `standardwebhooks`) accepts what siwa signs, with either
    /// secret of a rotation, and refuses a body changed after signing.
    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run standardwebhooks"))
    func theReferenceLibraryVerifiesWhatSiwaSigns() async throws {
        let texts = [Self.secretText(), Self.secretText()]
        let secrets = try texts.map { try WebhookSecret($0) }
        let body = Array(#"{"type":"user.deleted","data":{"sub":"001234.abc"}}"#.utf8)
        let headers = WebhookSignature.headers(id: "evt_42", timestamp: Date(), body: body, secrets: secrets)
        try await withTemporaryFolder("siwa-webhooks") { folder in
            let signed = try folder.write("body.json", String(decoding: body, as: UTF8.self))
            let tampered = try folder.write("tampered.json", String(decoding: body, as: UTF8.self) + " ")
            let arguments = { (secret: String, file: String) in
                [
                    secret, file, headers[.webhookID] ?? "", headers[.webhookTimestamp] ?? "",
                    headers[.webhookSignature] ?? "",
                ]
            }
            for text in texts {
                let answer = try await Self.script.run(arguments(text, signed))
                #expect(answer["verified"] as? Bool == true, "\(answer)")
                #expect((answer["payload"] as? [String: Any])?["type"] as? String == "user.deleted")
            }
            let refused = try await Self.script.run(arguments(texts[0], tampered))
            #expect(refused["verified"] as? Bool == false, "\(refused)")
            let stranger = try await Self.script.run(arguments(Self.secretText(), signed))
            #expect(stranger["verified"] as? Bool == false, "\(stranger)")
        }
    }
}
