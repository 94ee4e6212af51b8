import AppleSignIn
import Foundation
import SiwaTesting
import Testing

/// `siwa verify` run as a subprocess on real Apple tokens, offline (`--jwks FILE --now T`).
@Suite("siwa verify")
struct VerifyCommandTests {
    static let fixturesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("AppleSignInTests/Fixtures")
    static let fixtures = try! RealAppleFixtures(directory: fixturesDirectory)
    static let jwksPath = fixturesDirectory.appendingPathComponent("apple-jwks.json").path

    /// A recent real token with email, booleans and real_user_status.
    let fixture = fixtures.tokens[21]

    private func inside(_ token: RealAppleFixtures.Token) -> String { String(Int((token.iat + token.exp) / 2)) }

    private func checks(_ json: String) throws -> [String: Bool] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let checks = try #require(object["checks"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: checks.map { ($0["name"] as! String, $0["passed"] as! Bool) })
    }

    private func errorCode(_ json: String, check: String) async throws -> String? {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let checks = try #require(object["checks"] as? [[String: Any]])
        return checks.first { $0["name"] as? String == check }?["error"] as? String
    }

    @Test func realTokenPassesEveryCheckOffline() async throws {
        let result = try await SiwaProcess.run([
            "verify", fixture.token, "--client-id", fixture.aud, "--jwks", Self.jwksPath, "--now", inside(fixture),
        ])
        #expect(result.status == 0)
        for check in ["structure", "algorithm", "key", "signature", "issuer", "audience", "expiry", "issued-at"] {
            #expect(result.stdout.contains("✓ pass \(check)"))
        }
        #expect(result.stdout.contains(#""sub":"\#(fixture.sub)""#))
        #expect(result.stdout.hasSuffix("valid\n"))
    }

    @Test func eachFailedCheckIsNamedAndTheExitStatusIsOne() async throws {
        let wrongAudience = try await SiwaProcess.run([
            "verify", fixture.token, "--client-id", "com.example.other", "--jwks", Self.jwksPath, "--now",
            inside(fixture), "--json",
        ])
        #expect(wrongAudience.status == 1)
        #expect(try checks(wrongAudience.stdout)["audience"] == false)
        #expect(try await errorCode(wrongAudience.stdout, check: "audience") == "audienceMismatch")
        #expect(try checks(wrongAudience.stdout)["signature"] == true)

        let expired = try await SiwaProcess.run([
            "verify", fixture.token, "--jwks", Self.jwksPath, "--now", String(Int(fixture.exp) + 3600), "--json",
        ])
        #expect(expired.status == 1)
        #expect(try await errorCode(expired.stdout, check: "expiry") == "expired")
        #expect(try checks(expired.stdout)["audience"] == true)

        let early = try await SiwaProcess.run([
            "verify", fixture.token, "--jwks", Self.jwksPath, "--now", String(Int(fixture.iat) - 3600), "--json",
        ])
        #expect(try await errorCode(early.stdout, check: "issued-at") == "issuedInFuture")

        let wrongNonce = try await SiwaProcess.run([
            "verify", fixture.token, "--jwks", Self.jwksPath, "--now", inside(fixture), "--nonce", "abc", "--json",
        ])
        #expect(wrongNonce.status == 1)
        #expect(try await errorCode(wrongNonce.stdout, check: "claims") == "nonceMissing")

        var parts = fixture.token.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].dropLast(4)) + (parts[2].hasSuffix("AAAA") ? "BBBA" : "AAAA")
        let tampered = try await SiwaProcess.run([
            "verify", parts.joined(separator: "."), "--jwks", Self.jwksPath, "--now", inside(fixture), "--json",
        ])
        #expect(tampered.status == 1)
        #expect(try await errorCode(tampered.stdout, check: "signature") == "badSignature")

        let missingKeyFile = try await SiwaProcess.run([
            "verify", fixture.token, "--jwks", Self.jwksPath.replacing("apple-jwks", with: "missing"), "--json",
        ])
        #expect(missingKeyFile.status == 2)
        #expect(missingKeyFile.stdout.contains(#""error":"invalidConfiguration""#))
        #expect(missingKeyFile.stdout.contains("--jwks"))
    }

    @Test func nonceMatchingTheTokenPasses() async throws {
        let withNonce = try #require(Self.fixtures.tokens.first { $0.claims["nonce"]?.string == "hi" })
        let result = try await SiwaProcess.run([
            "verify", withNonce.token, "--jwks", Self.jwksPath, "--now", inside(withNonce), "--nonce", "hi",
        ])
        #expect(result.status == 0)
        #expect(result.stdout.contains("nonce matches"))
    }

    @Test func notificationBodyFromStandardInput() async throws {
        let notification = Self.fixtures.notifications[0]
        let result = try await SiwaProcess.run(
            [
                "verify", "-", "--jwks", Self.jwksPath, "--now", String(Int(notification.iat) + 10),
                "--client-id", notification.aud,
            ],
            stdin: String(decoding: notification.body, as: UTF8.self)
        )
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("notification\n"))
        #expect(result.stdout.contains("✓ pass event      \(notification.type) for \(notification.sub)"))
    }

    @Test func garbageIsAStructureFailure() async throws {
        let result = try await SiwaProcess.run(["verify", "not-a-token", "--jwks", Self.jwksPath])
        #expect(result.status == 1)
        #expect(result.stdout.contains("✗ FAIL structure  malformed"))
    }

    @Test func helpShowsAnExample() async throws {
        for command in ["verify", "client-secret"] {
            let result = try await SiwaProcess.run([command, "--help"])
            #expect(result.status == 0)
            #expect(result.stdout.contains("Example"))
        }
    }
}
