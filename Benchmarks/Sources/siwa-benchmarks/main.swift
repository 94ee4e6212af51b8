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
nonisolated func rate(seconds: Double, _ body: () async throws -> Void) async throws -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    var operations = 0
    while clock.now - start < .seconds(seconds) {
        for _ in 0..<100 { try await body() }
        operations += 100
    }
    let elapsed = clock.now - start
    return Double(operations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// One measured operation: its name and one run of it.
struct Measured {
    let name: String
    let body: () async throws -> Void
}

/// How ``measureInTurns(_:seconds:rounds:unit:)`` prints a figure.
enum Unit {
    case rate
    case nanoseconds
}

/// Measures every operation in `rounds` slices of `seconds / rounds`, taking turns (A B C A B C ...), so that a change
/// in the machine's speed during the run (another process, the CPU's clock) falls on all of them alike. Prints each
/// one's median rate and range, and returns the rates per round, by operation.
nonisolated func measureInTurns(
    _ operations: [Measured],
    seconds: Double,
    rounds: Int,
    unit: Unit = .rate
) async throws -> [[Double]] {
    for operation in operations {
        for _ in 0..<200 { try await operation.body() }  // warm up
    }
    var rates = Array(repeating: [Double](), count: operations.count)
    for _ in 0..<rounds {
        for (index, operation) in operations.enumerated() {
            rates[index].append(try await rate(seconds: seconds / Double(rounds), operation.body))
        }
    }
    for (operation, measured) in zip(operations, rates) {
        let name = operation.name + String(repeating: " ", count: max(0, 52 - operation.name.count))
        switch unit {
        case .rate:
            print("\(name) \(Int(median(measured).rounded())) /s (\(Int(measured.min()!)) to \(Int(measured.max()!)))")
        case .nanoseconds:
            let nanoseconds = { (rate: Double) in Int((1e9 / rate).rounded()) }
            print(
                "\(name) \(nanoseconds(median(measured))) ns "
                    + "(\(nanoseconds(measured.max()!)) to \(nanoseconds(measured.min()!)))"
            )
        }
    }
    return rates
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The median over rounds of `numerator / denominator` in the same round, as a percentage, with its range; then the
/// best round of one against the best round of the other. On a shared machine another tenant's work only ever slows a
/// round down, so with many short rounds the best of each is the figure least disturbed by it.
func ratio(_ numerator: [Double], _ denominator: [Double]) -> String {
    let ratios = zip(numerator, denominator).map { $0 / $1 * 100 }
    let best = numerator.max()! / denominator.max()! * 100
    return "\(Int(median(ratios).rounded()))% (\(Int(ratios.min()!.rounded()))–\(Int(ratios.max()!.rounded()))%); "
        + "best against best \(Int(best.rounded()))%"
}

nonisolated func runBenchmarks() async throws {

    let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3.0
    let clientID = "com.example.siwa.demo"  // a bundle id of the usual length (longer than a small string)
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

    if CommandLine.arguments.count > 2, ["siwa-only", "raw-only"].contains(CommandLine.arguments[2]) {
        // For profilers and counters (`perf record`, `perf stat` with a probe on malloc): one path alone, a fixed
        // number of times (the third argument, 20,000 by default).
        let count = CommandLine.arguments.count > 3 ? Int(CommandLine.arguments[3]) ?? 20_000 : 20_000
        if CommandLine.arguments[2] == "raw-only" {
            for _ in 0..<count {
                precondition(publicKey.isValidSignature(signature, for: signingInput, padding: .insecurePKCS1v1_5))
            }
        } else {
            for _ in 0..<count { _ = try await verifier.verify(token, expectedNonce: "bench-nonce") }
        }
        exit(0)
    }

    let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 10 : 10
    print("siwa benchmarks: \(seconds) s per figure in \(rounds) turns, one thread")
    let rates = try await measureInTurns(
        [
            Measured(name: "raw swift-crypto RSA-2048 signature checks") {
                guard publicKey.isValidSignature(signature, for: signingInput, padding: .insecurePKCS1v1_5) else {
                    fatalError()
                }
            },
            Measured(name: "siwa identity-token verifications (full)") {
                _ = try await verifier.verify(token, expectedNonce: "bench-nonce")
            },
            Measured(name: "jwt-kit 5 AppleIdentityToken verifications") {
                _ = try await jwtKitKeys.verify(token, as: AppleIdentityToken.self, expectedAudience: clientID)
            },
            Measured(name: "client-secret creations (ES256)") {
                _ = secrets.makeSecret(for: ClientID(clientID), now: now)
            },
        ],
        seconds: seconds,
        rounds: rounds
    )
    let (raw, siwa, jwtKit) = (rates[0], rates[1], rates[2])
    print("siwa / raw RSA: \(ratio(siwa, raw)), median of the turns")
    print("jwt-kit / raw RSA: \(ratio(jwtKit, raw))")
    print("siwa / jwt-kit: \(Double(Int(median(zip(siwa, jwtKit).map { $0 / $1 }) * 100)) / 100)x")

}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "store-sqlite" {
    try await runStoreSQLite(arguments: Array(CommandLine.arguments.dropFirst(2)))
} else {
    try await runBenchmarks()
}

func base64URLDecode(_ text: String) -> [UInt8] {
    var standard = text.replacing("-", with: "+").replacing("_", with: "/")
    while standard.utf8.count % 4 != 0 { standard.append("=") }
    return Array(Data(base64Encoded: standard)!)
}
