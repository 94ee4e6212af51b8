import AppleSignIn
import Crypto
import CryptoExtras
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Configuration")
struct ConfigurationTests {
    let key = P256.Signing.PrivateKey()

    private func expectLoads(_ source: AppleDeveloperKey.Source) throws {
        let loaded = try AppleDeveloperKey(source)
        #expect(loaded.privateKey.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
    }

    /// Expects `body` to throw `invalidConfiguration` whose reason starts with the name of `setting`.
    private func expectRefused(
        setting: String,
        mentioning detail: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        let error = #expect(throws: AppleSignInError.invalidConfiguration, sourceLocation: sourceLocation) {
            try body()
        }
        #expect(
            error?.reason.hasPrefix("\(setting):") == true,
            "\(error?.reason ?? "")",
            sourceLocation: sourceLocation
        )
        if let detail {
            #expect(error?.reason.contains(detail) == true, "\(error?.reason ?? "")", sourceLocation: sourceLocation)
        }
    }

    // MARK: - The .p8 key

    @Test func pkcs8PEMIsPrivateKeyPEM() {
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
    }

    @Test func keyLoadsFromPEMText() throws {
        try expectLoads(.pem(key.pemRepresentation))
    }

    @Test func keyLoadsFromPEMWithLiteralBackslashN() throws {
        let escaped = key.pemRepresentation.replacing("\n", with: "\\n")
        #expect(!escaped.contains("\n"))
        try expectLoads(.pem(escaped))
    }

    @Test func keyLoadsFromBase64OfThePEM() throws {
        try expectLoads(.base64(Data(key.pemRepresentation.utf8).base64EncodedString()))
    }

    @Test func keyLoadsFromBase64OfTheDER() throws {
        try expectLoads(.base64(key.derRepresentation.base64EncodedString()))
    }

    @Test func keyLoadsFromAFile() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("siwa-configuration-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("AuthKey_KEY0123456.p8")
        try Data(key.pemRepresentation.utf8).write(to: file)
        try expectLoads(.file(file.path))
    }

    @Test func missingKeyFileIsRefused() {
        expectRefused(setting: "privateKey", mentioning: "cannot read") {
            _ = try AppleDeveloperKey(.file("/nonexistent/siwa-\(UUID().uuidString)/AuthKey_X.p8"))
        }
    }

    @Test func refusalNamesTheGivenSetting() {
        expectRefused(setting: "SIWA_PRIVATE_KEY") {
            _ = try AppleDeveloperKey(.pem("not a key"), setting: "SIWA_PRIVATE_KEY")
        }
    }

    @Test func rsaPKCS1PEMIsRefused() throws {
        let pem = try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation
        // swift-crypto writes RSA private keys as PKCS#1.
        #expect(pem.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        expectRefused(setting: "privateKey", mentioning: "RSA PRIVATE KEY") { _ = try AppleDeveloperKey(.pem(pem)) }
    }

    @Test func rsaPKCS8PEMIsRefused() throws {
        let pem = try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        expectRefused(setting: "privateKey", mentioning: "RSA") { _ = try AppleDeveloperKey(.pem(pem)) }
    }

    @Test func sec1ECPrivateKeyPEMIsRefused() throws {
        // swift-crypto only writes PKCS#8, so the SEC1 ECPrivateKey (RFC 5915) is assembled here:
        // SEQUENCE { INTEGER 1, OCTET STRING d, [0] prime256v1, [1] BIT STRING public point }.
        let der: [UInt8] =
            [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + Array(key.rawRepresentation)
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
            + [0xA1, 0x44, 0x03, 0x42, 0x00] + Array(key.publicKey.x963Representation)
        let pem = pemText(label: "EC PRIVATE KEY", der: der)
        // The construction is a real SEC1 key: swift-crypto itself reads it back as this key.
        let reread = try P256.Signing.PrivateKey(pemRepresentation: pem)
        #expect(reread.rawRepresentation == key.rawRepresentation)
        expectRefused(setting: "privateKey", mentioning: "SEC1") { _ = try AppleDeveloperKey(.pem(pem)) }
        // The same SEC1 DER given as base64 is refused as well (it is not PKCS#8).
        expectRefused(setting: "privateKey", mentioning: "PKCS#8") {
            _ = try AppleDeveloperKey(.base64(Data(der).base64EncodedString()))
        }
    }

    @Test func p384KeyIsRefused() {
        let pem = P384.Signing.PrivateKey().pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        expectRefused(setting: "privateKey", mentioning: "P-256") { _ = try AppleDeveloperKey(.pem(pem)) }
    }

    @Test func garbageBase64IsRefused() {
        expectRefused(setting: "privateKey", mentioning: "base64") {
            _ = try AppleDeveloperKey(.base64("***not base64***"))
        }
        // Valid base64 of something that is no key.
        expectRefused(setting: "privateKey") {
            _ = try AppleDeveloperKey(.base64(Data("hello, world".utf8).base64EncodedString()))
        }
    }

    @Test func truncatedPEMIsRefused() {
        let lines = key.pemRepresentation.split(separator: "\n")
        let truncated = lines.dropLast().joined(separator: "\n")
        expectRefused(setting: "privateKey", mentioning: "END PRIVATE KEY") {
            _ = try AppleDeveloperKey(.pem(truncated))
        }
    }

    @Test func developerKeyPrintsRedacted() throws {
        let loaded = try AppleDeveloperKey(.pem(key.pemRepresentation))
        let credentials = ClientSecretCredentials(
            teamID: try TeamID("ABCDE12345"),
            keyID: try KeyID("KEY0123456"),
            key: loaded
        )
        let body = pemBody(key.pemRepresentation)
        for text in ["\(loaded)", String(reflecting: loaded), "\(credentials)", String(reflecting: credentials)] {
            #expect(!text.contains(body))
            #expect(!text.contains(String(body.prefix(24))))
            #expect(!text.contains("PRIVATE KEY"))
        }
        #expect("\(credentials)".contains("ABCDE12345"))
        #expect("\(credentials)".contains("KEY0123456"))
    }

    // MARK: - Team id, key id, credentials

    @Test(arguments: ["ABCDE1234", "ABCDE123456", "abcde12345", "ABCDE-1234", ""])
    func malformedTeamIDIsRefused(teamID: String) {
        expectRefused(setting: "teamID") {
            _ = try ClientSecretCredentials(
                teamID: teamID,
                keyID: "KEY0123456",
                privateKey: .pem(key.pemRepresentation)
            )
        }
    }

    @Test(arguments: ["KEY012345", "KEY01234567", "key0123456", "KEY 123456"])
    func malformedKeyIDIsRefused(keyID: String) {
        expectRefused(setting: "keyID") {
            _ = try ClientSecretCredentials(teamID: "ABCDE12345", keyID: keyID, privateKey: .pem(key.pemRepresentation))
        }
    }

    @Test(arguments: [
        ("key0123456", "'key0123456' has lower-case letters: did you mean KEY0123456?"),
        ("KEY012345", "got 9 characters"), ("KEY-123456", "'KEY-123456' has characters other than A-Z and 0-9"),
    ])
    func aMalformedKeyIDIsExplained(keyID: String, explanation: String) {
        expectRefused(setting: "keyID", mentioning: explanation) {
            _ = try ClientSecretCredentials(teamID: "ABCDE12345", keyID: keyID, privateKey: .pem(key.pemRepresentation))
        }
    }

    @Test func credentialsLoadFromSettings() throws {
        let credentials = try ClientSecretCredentials(
            teamID: " ABCDE12345\n",
            keyID: "KEY0123456",
            privateKey: .pem(key.pemRepresentation)
        )
        #expect(credentials.teamID.rawValue == "ABCDE12345")
        #expect(credentials.keyID.rawValue == "KEY0123456")
        #expect(credentials.key.privateKey.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
    }

    @Test func badKeyInCredentialsNamesPrivateKey() {
        expectRefused(setting: "privateKey") {
            _ = try ClientSecretCredentials(teamID: "ABCDE12345", keyID: "KEY0123456", privateKey: .base64("@@@"))
        }
    }

    // MARK: - AppleSignInConfiguration

    @Test func clientSecretLifetimeOverSixMonthsIsRefused() throws {
        expectRefused(setting: "clientSecretLifetime") {
            _ = try AppleSignInConfiguration(bundleIDs: ["com.example.app"], clientSecretLifetime: 15_777_001)
        }
        let longest = try AppleSignInConfiguration(bundleIDs: ["com.example.app"], clientSecretLifetime: 15_777_000)
        #expect(longest.clientSecretLifetime == 15_777_000)
    }

    @Test func noClientIDAtAllIsRefused() throws {
        expectRefused(setting: "bundleIDs") { _ = try AppleSignInConfiguration(bundleIDs: []) }
        // A Services ID alone is enough (web-only sites).
        let webOnly = try AppleSignInConfiguration(bundleIDs: [], servicesID: "com.example.web")
        #expect(webOnly.allowedClientIDs == ["com.example.web"])
    }

    @Test func servicesIDEqualToABundleIDIsRefused() {
        expectRefused(setting: "servicesID") {
            _ = try AppleSignInConfiguration(
                bundleIDs: ["com.example.app", "com.example.watch"],
                servicesID: "com.example.watch"
            )
        }
    }

    @Test func allowedClientIDsAreBundleIDsThenServicesID() throws {
        let configuration = try AppleSignInConfiguration(
            bundleIDs: ["com.example.app", "com.example.watch"],
            servicesID: "com.example.web"
        )
        #expect(configuration.allowedClientIDs == ["com.example.app", "com.example.watch", "com.example.web"])
        #expect(configuration.isServicesID("com.example.web"))
        #expect(!configuration.isServicesID("com.example.app"))
    }

    @Test func invalidClientIDIsRefusedWithItsIndex() {
        expectRefused(setting: "bundleIDs[1]") {
            _ = try AppleSignInConfiguration(bundleIDs: ["com.example.app", "com example app"])
        }
    }

    // MARK: - AppleBaseURL

    @Test func appleBaseURLDefaultsToApple() throws {
        #expect(AppleBaseURL.apple.url("/auth/token") == "https://appleid.apple.com/auth/token")
        #expect(try AppleSignInConfiguration(bundleIDs: ["com.example.app"]).appleBaseURL == .apple)
    }

    @Test(arguments: [
        "http://appleid.apple.com", "http://10.0.0.1:9090", "http://127.example.com", "http://127.0.0.1.example.com",
        "ftp://127.0.0.1",
    ])
    func plainHTTPToAnotherHostIsRefused(url: String) {
        expectRefused(setting: "appleBaseURL") { _ = try AppleBaseURL(url) }
    }

    @Test(arguments: ["not a url", "/auth/token", "https://", "https://appleid.apple.com/?x=1"])
    func nonURLIsRefused(url: String) {
        expectRefused(setting: "appleBaseURL") { _ = try AppleBaseURL(url) }
    }

    @Test func plainHTTPToLoopbackIsAccepted() throws {
        let local = try AppleBaseURL("http://127.0.0.1:9090")
        #expect(local.scheme == "http")
        #expect(local.authority == "127.0.0.1:9090")
        #expect(local.url("/auth/keys") == "http://127.0.0.1:9090/auth/keys")
        #expect(try AppleBaseURL("http://localhost:8080/").authority == "localhost:8080")
        #expect(try AppleBaseURL("http://127.0.0.2").authority == "127.0.0.2")
        #expect(try AppleBaseURL("http://[::1]:9090").authority == "[::1]:9090")
    }

    @Test func httpsKeepsItsPathPrefix() throws {
        let proxied = try AppleBaseURL("https://gateway.example.com/apple/")
        #expect(proxied.authority == "gateway.example.com")
        #expect(proxied.pathPrefix == "/apple")
        #expect(proxied.url("/auth/token") == "https://gateway.example.com/apple/auth/token")
    }

    // MARK: - Helpers

    private func pemText(label: String, der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(rest.prefix(64))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }

    /// The base64 body of a PEM, without its lines and line breaks.
    private func pemBody(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}
