import AppleSignIn
import Crypto
import CryptoExtras
import JWTKit
import SiwaTesting

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// One identity token, one RSA-2048 key, measured four ways on one thread, all from a nonisolated context so that no
// figure includes a hop to the main actor. Pin the process to one core with `taskset -c 0`.

/// Runs `body` repeatedly for `seconds` and returns operations per second.
nonisolated func measure(_ name: String, seconds: Double, _ body: () async throws -> Void) async throws -> Double {
    for _ in 0..<200 { try await body() }  // warm up
    let clock = ContinuousClock()
    let start = clock.now
    var operations = 0
    while clock.now - start < .seconds(seconds) {
        for _ in 0..<100 { try await body() }
        operations += 100
    }
    let elapsed = clock.now - start
    let perSecond =
        Double(operations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    print("\(name + String(repeating: " ", count: max(0, 52 - name.count))) \(Int(perSecond.rounded())) /s")
    return perSecond
}

nonisolated func runBenchmarks() async throws {

    let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3.0
    let clientID = "com.example.app"
    let apple = try TestAppleKeys(count: 1)
    let now = Date()
    let token = try apple.identityToken(
        TestClaims(
            aud: clientID,
            now: now,
            lifetime: 86_400,
            nonce: "bench-nonce",
            email: "x1y2z3@privaterelay.appleid.com",
            extra: [
                #""c_hash":"abc123""#, #""email_verified":true"#, #""is_private_email":true"#,
                #""auth_time":\#(Int(now.timeIntervalSince1970))"#,
                #""nonce_supported":true"#, #""real_user_status":2"#,
            ]
        )
    )

    // siwa: the full path (split, base64url, header, key lookup, RS256, claims, iss, aud, exp, iat, nonce).
    let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID(clientID)])
    let keyCache = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()))
    let verifier = IdentityTokenVerifier(configuration: configuration, keys: keyCache)
    _ = try await verifier.verify(token, expectedNonce: "bench-nonce")

    // jwt-kit 5: its own Apple identity token, verified through its key collection (signature, iss, exp, aud).
    let jwtKitKeys = JWTKeyCollection()
    try await jwtKitKeys.add(jwksJSON: String(decoding: try apple.jwks(), as: UTF8.self))
    _ = try await jwtKitKeys.verify(token, as: AppleIdentityToken.self, expectedAudience: clientID)

    // Raw swift-crypto: SHA-256 of the signing input and the RSA-2048 PKCS#1 v1.5 check, nothing else.
    let parts = token.split(separator: ".")
    let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
    let signature = _RSA.Signing.RSASignature(rawRepresentation: base64URLDecode(String(parts[2])))
    let publicKey = apple.keys[0].privateKey.publicKey
    precondition(publicKey.isValidSignature(signature, for: signingInput, padding: .insecurePKCS1v1_5))

    // Client secrets: one ES256 signature each (uncached).
    let credentials = ClientSecretCredentials(
        teamID: try TeamID("ABCDE12345"),
        keyID: try KeyID("KEY1234567"),
        key: AppleDeveloperKey(privateKey: P256.Signing.PrivateKey())
    )
    let secrets = ClientSecretFactory(credentials: credentials, lifetime: 3600)

    if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "siwa-only" {
        // For profilers (valgrind --tool=callgrind): the siwa path alone, a fixed number of times.
        for _ in 0..<20_000 { _ = try await verifier.verify(token, expectedNonce: "bench-nonce") }
        exit(0)
    }

    print("siwa benchmarks: \(seconds) s per figure, one thread")
    let raw = try await measure("raw swift-crypto RSA-2048 signature checks", seconds: seconds) {
        guard publicKey.isValidSignature(signature, for: signingInput, padding: .insecurePKCS1v1_5) else {
            fatalError()
        }
    }
    let siwa = try await measure("siwa identity-token verifications (full)", seconds: seconds) {
        _ = try await verifier.verify(token, expectedNonce: "bench-nonce")
    }
    let jwtKit = try await measure("jwt-kit 5 AppleIdentityToken verifications", seconds: seconds) {
        _ = try await jwtKitKeys.verify(token, as: AppleIdentityToken.self, expectedAudience: clientID)
    }
    _ = try await measure("client-secret creations (ES256)", seconds: seconds) {
        _ = secrets.makeSecret(for: ClientID(clientID), now: now)
    }
    print("siwa / raw RSA: \(Int((siwa / raw * 100).rounded()))%")
    print("jwt-kit / raw RSA: \(Int((jwtKit / raw * 100).rounded()))%")
    print("siwa / jwt-kit: \(String(Double(Int(siwa / jwtKit * 100)) / 100))x")

}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "store-pools" {
    try await runStorePools(arguments: Array(CommandLine.arguments.dropFirst(2)))
} else if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "store-sqlite" {
    try await runStoreSQLite(arguments: Array(CommandLine.arguments.dropFirst(2)))
} else {
    try await runBenchmarks()
}

func base64URLDecode(_ text: String) -> [UInt8] {
    var standard = text.replacing("-", with: "+").replacing("_", with: "/")
    while standard.utf8.count % 4 != 0 { standard.append("=") }
    return Array(Data(base64Encoded: standard)!)
}
