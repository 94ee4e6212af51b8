import AppleSignIn
import Crypto
import Foundation
import SiwaTesting
import Testing

/// `siwa client-secret` run as a subprocess with a key generated for the test.
@Suite("siwa client-secret")
struct ClientSecretCommandTests {
    let key = P256.Signing.PrivateKey()
    let folder: TemporaryFolder
    let keyFile: String

    init() throws {
        folder = try TemporaryFolder("siwa-cli")
        keyFile = try folder.write("AuthKey_KEY1234567.p8", key.pemRepresentation)
    }

    private func decode(_ part: Substring) async throws -> [String: Any] {
        var base64 = part.replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        let data = try #require(Data(base64Encoded: String(base64)))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func printsASecretSignedByTheKey() async throws {
        let before = Int(Date().timeIntervalSince1970)
        let result = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--client-id", "com.example.web",
            "--key-file", keyFile, "--lifetime", "3600",
        ])
        #expect(result.status == 0)
        #expect(result.stderr.contains("expires"))
        let token = result.stdout.trimmingCharacters(in: .newlines)
        let parts = token.split(separator: ".")
        try #require(parts.count == 3)
        let header = try await decode(parts[0])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "KEY1234567")
        let claims = try await decode(parts[1])
        #expect(claims["iss"] as? String == "ABCDE12345")
        #expect(claims["sub"] as? String == "com.example.web")
        #expect(claims["aud"] as? String == "https://appleid.apple.com")
        let iat = try #require(claims["iat"] as? Int)
        #expect(iat >= before - 1 && iat <= before + 60)
        #expect(claims["exp"] as? Int == iat + 3600)
        var signatureBase64 = parts[2].replacing("-", with: "+").replacing("_", with: "/")
        while signatureBase64.count % 4 != 0 { signatureBase64.append("=") }
        let signature = try P256.Signing.ECDSASignature(
            rawRepresentation: try #require(Data(base64Encoded: String(signatureBase64)))
        )
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test func jsonOutput() async throws {
        let result = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--client-id", "com.example.app",
            "--key-file", keyFile, "--json",
        ])
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((object["clientSecret"] as? String)?.split(separator: ".").count == 3)
        #expect(object["expiresAt"] is String)
    }

    @Test func badSettingsAreNamed() async throws {
        let badKeyID = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "KEY", "--client-id", "com.example.app",
            "--key-file", keyFile,
        ])
        #expect(badKeyID.status == 2)
        #expect(badKeyID.stderr.contains("--key-id"))
        let missingKey = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--client-id", "com.example.app",
            "--key-file", keyFile + ".missing", "--json",
        ])
        #expect(missingKey.status == 2)
        #expect(missingKey.stdout.contains(#""error":"invalidConfiguration""#))
        let tooLong = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--client-id", "com.example.app",
            "--key-file", keyFile, "--lifetime", "15777001",
        ])
        #expect(tooLong.status == 2)
        #expect(tooLong.stderr.contains("--lifetime"))
        let lowerCase = try await SiwaProcess.run([
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "key1234567", "--client-id", "com.example.app",
            "--key-file", keyFile,
        ])
        #expect(lowerCase.status == 2)
        #expect(lowerCase.stderr.contains("did you mean KEY1234567?"), "\(lowerCase.stderr)")
    }

    /// A key id that is not the key file's (`AuthKey_<KeyID>.p8`) signs secrets Apple refuses with `invalid_client`:
    /// refused here, unless `--force`.
    @Test func aKeyIDThatIsNotTheKeyFilesIsRefusedUnlessForced() async throws {
        let arguments = [
            "client-secret", "--team-id", "ABCDE12345", "--key-id", "ABCDE12345", "--client-id", "com.example.app",
            "--key-file", keyFile,
        ]
        let refused = try await SiwaProcess.run(arguments)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("the key file is AuthKey_KEY1234567.p8 but the key id is ABCDE12345"))
        #expect(refused.stdout.isEmpty)
        let forced = try await SiwaProcess.run(arguments + ["--force"])
        #expect(forced.status == 0)
        #expect(forced.stdout.split(separator: ".").count == 3)
    }

    /// With no option, the secret is made from serve's settings; an option that contradicts the configured key id is
    /// refused; the key may be base64 in a file or a variable.
    @Test func itReadsTheServersSettingsAndBase64Keys() async throws {
        let base64 = Data(key.pemRepresentation.utf8).base64EncodedString()
        let base64File = URL(fileURLWithPath: keyFile).deletingLastPathComponent().appendingPathComponent("key.b64")
            .path
        try base64.write(toFile: base64File, atomically: true, encoding: .utf8)
        let settings = [
            "SIWA_TEAM_ID": "ABCDE12345", "SIWA_KEY_ID": "KEY1234567", "SIWA_PRIVATE_KEY_FILE": base64File,
            "SIWA_SERVICES_ID": "com.example.web", "SIWA_BUNDLE_IDS": "com.example.app",
        ]
        let configured = try await SiwaProcess.run(["client-secret", "--json"], environment: settings)
        #expect(configured.status == 0, "\(configured.stdout) \(configured.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(configured.stdout.utf8)) as? [String: Any]
        )
        let token = try #require(object["clientSecret"] as? String)
        let claims = try await decode(token.split(separator: ".")[1])
        #expect(claims["sub"] as? String == "com.example.web")
        #expect(claims["iss"] as? String == "ABCDE12345")

        let inVariable = try await SiwaProcess.run(
            ["client-secret", "--client-id", "com.example.app"],
            environment: settings.merging(["SIWA_PRIVATE_KEY_FILE": "", "SIWA_PRIVATE_KEY_BASE64": base64]) { $1 }
        )
        #expect(inVariable.status == 0, "\(inVariable.stderr)")

        let contradicting = try await SiwaProcess.run(
            ["client-secret", "--key-id", "OTHER12345"],
            environment: settings
        )
        #expect(contradicting.status == 2)
        #expect(contradicting.stderr.contains("differs from the configured SIWA_KEY_ID KEY1234567"))
    }
}
