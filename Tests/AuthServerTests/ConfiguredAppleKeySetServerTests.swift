import AppleSignIn
import AppleSignInAsyncHTTPClient
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The server with a copy of Apple's key set in its configuration signs users in while Apple's key endpoint fails,
/// from its first sign-in on.
@Suite("Server: a configured copy of Apple's key set")
struct ConfiguredAppleKeySetServerTests {
    @Test func aNativeSignInSucceedsWithAppleKeyEndpointDownFromTheStart() async throws {
        try await ServerHarness.run(adjustApple: Self.copyTheEmulatorsKeys) { server in
            try await server.emulator("/emulator/faults", ["endpoint": "keys", "mode": "error"])
            let signIn = try await server.signIn("keys-down@example.com")
            #expect(signIn.status == .ok, "\(signIn.json)")
        }
    }

    @Test func withoutTheCopyTheSameSignInFails() async throws {
        try await ServerHarness.run { server in
            try await server.emulator("/emulator/faults", ["endpoint": "keys", "mode": "error"])
            let signIn = try await server.signIn("keys-down@example.com")
            #expect(signIn.status != .ok)
        }
    }

    /// A copy of the emulator's key set, made while its key endpoint answers, as the configured fallback.
    @Sendable private static func copyTheEmulatorsKeys(
        _ apple: inout AppleSignInConfiguration,
        emulatorURL: String
    ) async throws {
        let copy = try await AppleKeysEndpoint(
            baseURL: try AppleBaseURL(emulatorURL),
            transport: AsyncHTTPClientTransport()
        ).fetchKeySet().keySet
        apple.configuredKeySet = ConfiguredAppleKeySet(keySet: copy)
    }
}
