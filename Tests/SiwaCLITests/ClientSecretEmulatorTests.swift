import AppleIDEmulator
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// The secret `siwa client-secret` prints is one Apple's token endpoint accepts: the emulator, which re-declares
/// Apple's rules apart from `AppleSignIn`, checks it while exchanging an authorization code.
@Suite("ClientSecretEmulatorTests")
struct ClientSecretEmulatorTests {
    static let teamID = "TEAMCLI001"
    static let keyID = "KEYCLI0001"
    static let bundleID = "com.example.cli"

    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder("siwa-secret")
    }

    @Test func emulatorAcceptsTheSecretAndRefusesOneSignedWithAnotherKey() async throws {
        let teamKey = P256.Signing.PrivateKey()
        let secret = try await clientSecret(signedWith: teamKey)
        let forged = try await clientSecret(signedWith: P256.Signing.PrivateKey())
        let emulator = try await AppleIDEmulator(
            configuration: EmulatorConfiguration(teams: [
                .init(
                    teamID: Self.teamID,
                    keyID: Self.keyID,
                    publicKeyPEM: teamKey.publicKey.pemRepresentation,
                    clients: [.init(clientID: Self.bundleID)]
                )
            ]),
            delivery: nil
        )
        try await Application(router: emulator.router()).test(.router) { client in
            let credential = try await post(
                client,
                "/emulator/native-sign-in",
                contentType: "application/json",
                body: #"{"clientId":"\#(Self.bundleID)","email":"cli@example.com"}"#
            )
            #expect(credential.status == .ok)
            let code = try #require(credential.json["authorizationCode"] as? String)

            let refused = try await exchange(client, code: code, secret: forged)
            #expect(refused.status == .badRequest)
            #expect(refused.json["error"] as? String == "invalid_client")

            let accepted = try await exchange(client, code: code, secret: secret)
            #expect(accepted.json["error"] == nil, "\(accepted.json)")
            #expect(accepted.status == .ok)
            #expect(accepted.json["refresh_token"] is String)
            #expect(accepted.json["id_token"] is String)
        }
    }

    // MARK: Helpers

    /// Runs `siwa client-secret` with `key` in a `.p8` file and returns what it printed.
    private func clientSecret(signedWith key: P256.Signing.PrivateKey) async throws -> String {
        let keyFile = folder.url.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let result = try await SiwaProcess.run([
            "client-secret", "--team-id", Self.teamID, "--key-id", Self.keyID, "--client-id", Self.bundleID,
            "--key-file", keyFile,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let secret = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.split(separator: ".").count == 3)
        return secret
    }

    /// `POST /auth/token` with `grant_type=authorization_code`, as siwa's server sends it for a native code.
    private func exchange(
        _ client: some TestClientProtocol,
        code: String,
        secret: String
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let form = [
            ("grant_type", "authorization_code"), ("code", code), ("client_id", Self.bundleID),
            ("client_secret", secret),
        ]
        .map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
        .joined(separator: "&")
        return try await post(client, "/auth/token", contentType: "application/x-www-form-urlencoded", body: form)
    }

    private func post(
        _ client: some TestClientProtocol,
        _ path: String,
        contentType: String,
        body: String
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let response = try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: contentType],
            body: ByteBuffer(string: body)
        )
        let json =
            (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any] ?? [:]
        return (response.status, json)
    }
}
