import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The token endpoint refuses every client secret Apple refuses, with Apple's bare `{"error":"invalid_client"}`, so
/// that a team's staging fails where production would.
@Suite("Emulator: client secrets refused as Apple refuses them")
struct ClientSecretRefusalTests {
    /// What a client secret says, each field as Apple checks it.
    struct Secret: Sendable {
        var alg = "ES256"
        var kid: String? = EmulatorHarness.keyID
        var iss = EmulatorHarness.teamID
        var sub = EmulatorHarness.bundleID.rawValue
        var aud = "https://appleid.apple.com"
        /// `iat` and `exp`, in seconds from now.
        var issued = 0
        var lifetime = 3600
        var otherKey = false
    }

    /// Each way a secret is wrong, and what it is.
    static let refused: [(String, @Sendable (inout Secret) -> Void)] = [
        ("another key id", { $0.kid = "KEYWRONG01" }),
        ("no key id", { $0.kid = nil }),
        ("another team", { $0.iss = EmulatorHarness.otherTeamID }),
        ("another client id", { $0.sub = EmulatorHarness.servicesID.rawValue }),
        ("another audience", { $0.aud = "https://appleid.apple.com/auth/token" }),
        ("expired", { $0.issued = -7200 }),
        ("longer than six months", { $0.lifetime = 15_777_001 }),
        ("signed with another key", { $0.otherKey = true }),
        ("not ES256", { $0.alg = "ES384" }),
    ]

    @Test(arguments: refused.indices)
    func aWrongSecretIsInvalidClientAndSpendsNoCode(index: Int) async throws {
        let (what, change) = Self.refused[index]
        try await EmulatorHarness.run { emulator in
            var wrong = Secret()
            change(&wrong)
            let (code, refused) = try await exchangeNewCode(emulator, secret: wrong)
            #expect(refused.status == 400, "\(what)")
            #expect(refused.body == #"{"error":"invalid_client"}"#, "\(what): Apple says no more")

            let accepted = try await exchange(emulator, code: code, secret: try secret(Secret(), emulator))
            #expect(accepted.status == 200, "\(what): \(accepted.body)")
        }
    }

    @Test func aSecretOfExactlySixMonthsIsAccepted() async throws {
        try await EmulatorHarness.run { emulator in
            var longest = Secret()
            longest.lifetime = 15_777_000
            let accepted = try await exchangeNewCode(emulator, secret: longest).answer
            #expect(accepted.status == 200, "\(accepted.body)")
        }
    }

    @Test func theLogSaysWhyASecretWasRefused() async throws {
        try await EmulatorHarness.run { emulator in
            var wrong = Secret()
            wrong.kid = "KEYWRONG01"
            _ = try await exchangeNewCode(emulator, secret: wrong)
            let token = try await emulator.log().last { $0["endpoint"] as? String == "token" }
            let outcome = try #require(token?["outcome"] as? String)
            #expect(outcome.hasPrefix("invalid_client ("))
            #expect(outcome.contains("KEYWRONG01") && outcome.contains(EmulatorHarness.keyID))
        }
    }

    // MARK: Helpers

    /// Signs a new Apple ID in natively and exchanges its code with `secret`: the code and the token endpoint's answer.
    private func exchangeNewCode(
        _ emulator: EmulatorHarness,
        secret: Secret
    ) async throws -> (code: String, answer: EmulatorHarness.Answer) {
        let credential = try await emulator.nativeSignIn("\(UUID().uuidString.prefix(8))@example.com")
        let code = try #require(credential["authorizationCode"] as? String)
        return (code, try await exchange(emulator, code: code, secret: try self.secret(secret, emulator)))
    }

    /// Signs `secret` as a developer's server would: ES256 over `header.claims`, the signature as JWS's raw `r‖s`.
    private func secret(_ secret: Secret, _ emulator: EmulatorHarness) throws -> String {
        var header = ["alg": secret.alg]
        if let kid = secret.kid { header["kid"] = kid }
        let issued = Int(emulator.clock.now.timeIntervalSince1970) + secret.issued
        let claims: [String: Any] = [
            "iss": secret.iss, "sub": secret.sub, "aud": secret.aud, "iat": issued, "exp": issued + secret.lifetime,
        ]
        let input =
            "\(Self.base64URL(try JSONSerialization.data(withJSONObject: header))).\(Self.base64URL(try JSONSerialization.data(withJSONObject: claims)))"
        let key = secret.otherKey ? P256.Signing.PrivateKey() : emulator.teamKey
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)))
        return "\(input).\(Self.base64URL(signature.rawRepresentation))"
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `POST /auth/token` for a native code.
    private func exchange(
        _ emulator: EmulatorHarness,
        code: String,
        secret: String
    ) async throws -> EmulatorHarness.Answer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", EmulatorHarness.bundleID.rawValue),
            ("client_secret", secret),
        ]
        .map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
        .joined(separator: "&")
        return try await emulator.send(
            .post,
            "/auth/token",
            body: body,
            contentType: "application/x-www-form-urlencoded"
        )
    }
}
