import AppleIDEmulator
import Crypto
import Foundation
import Testing

/// `--config FILE` as a developer writes it: what it may leave out, and what the emulator refuses as Apple would.
@Suite("Emulator: configuration")
struct EmulatorConfigurationTests {
    /// A configuration of one team whose clients are `clients` (JSON objects).
    private func json(clients: [[String: Any]], extra: [String: Any] = [:]) throws -> Data {
        let team: [String: Any] = [
            "teamID": "TEAMJSON01", "keyID": "KEYJSON001",
            "publicKeyPEM": P256.Signing.PrivateKey().publicKey.pemRepresentation, "clients": clients,
        ]
        return try JSONSerialization.data(withJSONObject: ["teams": [team]].merging(extra) { $1 })
    }

    @Test func aNativeOnlyClientNeedsNoRedirectURIs() async throws {
        let data = try json(clients: [["clientID": "com.example.app"]])
        let configuration = try JSONDecoder().decode(EmulatorConfiguration.self, from: data)
        #expect(configuration.teams.first?.clients.first?.redirectURIs == [])
        _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
    }

    /// Redirect URIs Apple refuses to register: http, localhost, IP addresses.
    static let localRedirectURIs = [
        "http://app.example.com/callback", "https://localhost/callback", "https://api.localhost:8443/callback",
        "https://127.0.0.1/callback", "https://192.168.1.20:8443/callback", "https://[::1]/callback",
    ]

    @Test(arguments: localRedirectURIs)
    func aRedirectURIAppleRefusesIsRefusedUnlessAllowed(uri: String) async throws {
        var configuration = try JSONDecoder().decode(
            EmulatorConfiguration.self,
            from: try json(clients: [
                ["clientID": "com.example.app"],
                ["clientID": "com.example.web", "redirectURIs": ["https://example.com/cb", uri]],
            ])
        )
        let error = await #expect(throws: EmulatorConfigurationError.self) {
            _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
        }
        #expect(error?.field == "teams[0].clients[1].redirectURIs[1]")
        #expect(error?.description.contains(uri) == true)
        #expect(error?.remedy.contains(#""allowLocalRedirectURIs": true"#) == true)

        configuration.allowLocalRedirectURIs = true
        _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
    }

    /// Apple registers a server-to-server notification endpoint only as https on a domain name, as a redirect URI.
    @Test(arguments: ["http://example.com/auth/apple/notifications", "https://localhost/auth/apple/notifications"])
    func aNotificationURLAppleRefusesIsRefusedUnlessAllowed(url: String) async throws {
        var configuration = try JSONDecoder().decode(
            EmulatorConfiguration.self,
            from: try json(clients: [
                ["clientID": "com.example.app", "notificationURL": "https://example.com/auth/apple/notifications"],
                ["clientID": "com.example.other", "notificationURL": url],
            ])
        )
        let error = await #expect(throws: EmulatorConfigurationError.self) {
            _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
        }
        #expect(error?.field == "teams[0].clients[1].notificationURL")
        #expect(error?.description.contains(url) == true)
        #expect(error?.remedy.contains("https://example.com/auth/apple/notifications") == true)

        configuration.allowLocalRedirectURIs = true
        _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
    }

    @Test func allowLocalRedirectURIsIsReadFromTheFile() throws {
        let data = try json(
            clients: [["clientID": "com.example.web", "redirectURIs": ["http://localhost:8080/cb"]]],
            extra: ["allowLocalRedirectURIs": true]
        )
        #expect(try EmulatorConfiguration(json: data).allowLocalRedirectURIs)
        #expect(try EmulatorConfiguration(json: try json(clients: [])).allowLocalRedirectURIs == false)
    }

    @Test func aDecodingErrorBecomesTheFieldAndWhatToWrite() throws {
        let cases: [(Data, field: String, problem: String, remedy: String)] = [
            (Data(#"{"teams": [{"keyID": "K"}]}"#.utf8), "teams[0].teamID", "is missing", "Team ID"),
            (try json(clients: [["clientID": 7]]), "teams[0].clients[0].clientID", "is not a string", "bundle id"),
            (try json(clients: [], extra: ["keyGracePeriod": "1h"]), "keyGracePeriod", "is not a number", "seconds"),
            (
                try json(clients: [["clientID": "a", "redirectURIs": "https://x.example"]]),
                "teams[0].clients[0].redirectURIs", "is not a list", "https URLs"
            ),
            (Data("{\"teams\": [".utf8), "the file", "is not JSON", "teamID"),
            (Data("{}".utf8), "teams", "is missing", "a list of teams"),
        ]
        for (data, field, problem, remedy) in cases {
            let error = #expect(throws: EmulatorConfigurationError.self) { try EmulatorConfiguration(json: data) }
            #expect(error?.field == field)
            #expect(error?.problem == problem, "\(field)")
            #expect(error?.remedy.contains(remedy) == true, "\(field): \(error?.remedy ?? "")")
            #expect(error?.description.hasPrefix("\(field) \(problem): write ") == true)
        }
    }

    @Test func aKeyThatIsNotAPublicKeyIsNamedNeverShown() async throws {
        let privateKey = P256.Signing.PrivateKey().pemRepresentation
        for (pem, problem) in [(privateKey, "holds a private key"), ("MFkw", "is not a P-256 public key in PEM")] {
            var configuration = try EmulatorConfiguration(json: try json(clients: []))
            configuration.teams[0].publicKeyPEM = pem
            let error = await #expect(throws: EmulatorConfigurationError.self) {
                _ = try await AppleIDEmulator(configuration: configuration, delivery: nil)
            }
            #expect(error?.field == "teams[0].publicKeyPEM")
            #expect(error?.problem == problem)
            #expect(error?.remedy.contains("openssl ec -in AuthKey_<Key ID>.p8 -pubout") == true)
            #expect(error?.description.contains(pem) == false)
        }
    }

    @Test func aClientIDBelongsToOneTeam() throws {
        var configuration = try EmulatorConfiguration(json: try json(clients: [["clientID": "com.example.app"]]))
        var other = configuration.teams[0]
        other.teamID = "TEAMJSON02"
        configuration.teams.append(other)
        let error = #expect(throws: EmulatorConfigurationError.self) { try configuration.validate() }
        #expect(error?.field == "teams[1].clients[0].clientID")
        #expect(error?.problem == "is com.example.app, which teams[0] registers already")
    }
}
