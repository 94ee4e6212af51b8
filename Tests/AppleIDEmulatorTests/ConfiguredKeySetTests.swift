import AppleSignIn
import Foundation
import SiwaTesting
import Testing

/// A copy of the emulator's key set in configuration: sign-ins verify while its key endpoint fails, and with `instead`
/// the endpoint is never asked.
@Suite("Emulator: a configured copy of Apple's key set")
struct ConfiguredKeySetTests {
    @Test func aTokenVerifiesWithTheKeyEndpointDownWhenTheCopyIsTheFallback() async throws {
        try await EmulatorHarness.run { emulator in
            let (copy, idToken) = try await copyAndSignIn(emulator)
            #expect(try await emulator.control("faults", ["endpoint": "keys", "mode": "error"]).status == 200)

            await #expect(throws: AppleSignInError.keysUnavailable) { try await emulator.verifier().verify(idToken) }
            var configuration = try emulator.configuration()
            configuration.configuredKeySet = ConfiguredAppleKeySet(keySet: copy, use: .fallback)
            let token = try await emulator.verifier(configuration, keys: keys(configuration, emulator)).verify(idToken)
            #expect(token.email == "pinned@example.com")
            let log = try await emulator.log()
            #expect(log.contains { $0["outcome"] as? String == "fault: 500" && $0["endpoint"] as? String == "keys" })
        }
    }

    @Test func insteadNeverAsksTheKeyEndpoint() async throws {
        try await EmulatorHarness.run { emulator in
            let (copy, idToken) = try await copyAndSignIn(emulator)
            let asked = try await keyCalls(emulator)

            var configuration = try emulator.configuration()
            configuration.configuredKeySet = ConfiguredAppleKeySet(keySet: copy, use: .instead)
            let keys = keys(configuration, emulator)
            _ = try await emulator.verifier(configuration, keys: keys).verify(idToken)
            emulator.clock.advance(by: 2 * 86_400)
            // Long after the cache's default lifetime, the copy still answers: a refetch asks it again, not Apple.
            _ = try await keys.key(for: try #require(copy.keys.keys.first))
            #expect(try await keyCalls(emulator) == asked)
        }
    }

    // MARK: Helpers

    /// A copy of the emulator's key set, as an operator would save it, and an identity token of a native sign-in.
    private func copyAndSignIn(_ emulator: EmulatorHarness) async throws -> (AppleKeySet, String) {
        let copy = try await AppleKeysEndpoint(baseURL: emulator.baseURL, transport: emulator.transport)
            .fetchKeySet().keySet
        let credential = try await emulator.nativeSignIn("pinned@example.com")
        return (copy, try #require(credential["identityToken"] as? String))
    }

    /// siwa's key cache as the server builds it for `configuration`, over the emulator's key endpoint.
    private func keys(_ configuration: AppleSignInConfiguration, _ emulator: EmulatorHarness) -> AppleKeyCache {
        AppleKeyCache(
            source: configuration.keySource(
                fetching: AppleKeysEndpoint(
                    baseURL: emulator.baseURL,
                    transport: emulator.transport,
                    retryPolicy: RetryPolicy(maximumAttempts: 1, timeout: .seconds(5))
                )
            ),
            clock: emulator.clock,
            minimumRefetchInterval: 0
        )
    }

    /// How many times the emulator's key endpoint was called.
    private func keyCalls(_ emulator: EmulatorHarness) async throws -> Int {
        try await emulator.log().filter { $0["endpoint"] as? String == "keys" }.count
    }
}
