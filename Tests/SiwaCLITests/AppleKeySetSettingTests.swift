import AppleSignIn
import Foundation
import SiwaTesting
import Testing

@testable import SiwaCLI

/// `SIWA_APPLE_KEY_SET` and `SIWA_APPLE_KEY_SET_MODE` as serve reads them: a copy of Apple's key set, fallback unless
/// told otherwise, refused whole with the setting named when a key in it cannot be used.
@Suite("SIWA_APPLE_KEY_SET")
struct AppleKeySetSettingTests {
    /// (`SIWA_APPLE_KEY_SET_FILE` is read by the process's settings source: `DoctorAppleTests` runs it.)
    @Test func aCopyIsTheFallbackUnlessToldInstead() throws {
        let keys = try TestAppleKeys(count: 2, kidPrefix: "pinned-")
        let jwks = String(decoding: try keys.jwks(), as: UTF8.self)
        let fallback = try #require(try load(["SIWA_APPLE_KEY_SET": jwks]).configuredKeySet)
        #expect(fallback.use == .fallback)
        #expect(Set(fallback.keySet.keys.keys) == ["pinned-1", "pinned-2"])
        let instead = try load(["SIWA_APPLE_KEY_SET": jwks, "SIWA_APPLE_KEY_SET_MODE": "instead"])
        #expect(instead.configuredKeySet?.use == .instead)
        #expect(try load([:]).configuredKeySet == nil)
    }

    @Test func aKeyWithoutKidIsRefusedNamingTheSetting() throws {
        let keys = try TestAppleKeys(count: 2)
        let jwks = String(decoding: try keys.jwks(), as: UTF8.self).replacing("\"kid\":\"test-key-2\",", with: "")
        let problem = try #require(throws: ServerSettings.Problem.self) { try load(["SIWA_APPLE_KEY_SET": jwks]) }
        #expect(problem.variable == "SIWA_APPLE_KEY_SET")
        #expect(problem.fix.hasPrefix("key 2: has no \"kid\""), "\(problem.fix)")
        let noCopy = try #require(throws: ServerSettings.Problem.self) {
            try load(["SIWA_APPLE_KEY_SET_MODE": "instead"])
        }
        #expect(noCopy.variable == "SIWA_APPLE_KEY_SET_MODE")
    }

    private func load(_ environment: [String: String]) throws -> AppleSignInConfiguration {
        let settings = try ServerSettings.load(
            from: environment.merging([
                "SIWA_BUNDLE_IDS": "com.example.app",
                "SIWA_DATA_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
            ]) { given, _ in given },
            createsDataKey: false
        )
        return try #require(settings.appleIfConfigured)
    }
}
