import AppleSignIn
import Dispatch
import Foundation

// libFuzzer entry point over siwa's parsers of hostile input. The first byte of each input picks the parser:
//
// 0: an identity token (`verify`, then `inspect`, which runs every check even after one fails)
// 1: a notification body (`{"payload": "<JWT>"}`)
// 2: a `form_post` callback body
// 3: JWT claims JSON, wrapped in a real Apple header and signature (`inspect` runs the claim checks)
// 4: the `user` JSON of the web callback
// 5: a JWKS document
//
// Apple's real key set and a clock inside the real tokens' lifetime come from the test fixtures, so real tokens
// verify and their mutations reach every check.

/// The fixtures directory: `SIWA_FUZZ_FIXTURES`, or the main package's test fixtures.
let fixturesDirectory: URL = {
    if let path = ProcessInfo.processInfo.environment["SIWA_FUZZ_FIXTURES"] { return URL(fileURLWithPath: path) }
    return URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Tests/AppleSignInTests/Fixtures")
}()

struct FixedClock: WallClock {
    let now: Date
}

struct Harness: Sendable {
    let verifier: IdentityTokenVerifier
    /// A real Apple header and signature, around which claims are fuzzed.
    let header: String
    let signature: String

    init() {
        do {
            let jwks = try Data(contentsOf: fixturesDirectory.appendingPathComponent("apple-jwks.json"))
            let tokens = try Data(contentsOf: fixturesDirectory.appendingPathComponent("identity-tokens.json"))
            let entries = try JSONSerialization.jsonObject(with: tokens) as? [[String: Any]] ?? []
            let token = entries.first?["token"] as? String ?? "e30.e30.AA"
            let parts = token.split(separator: ".").map(String.init)
            header = parts[0]
            signature = parts[2]
            let claims = try JSONSerialization.jsonObject(with: Harness.base64URLDecode(parts[1])) as? [String: Any]
            let issuedAt = (claims?["iat"] as? Double) ?? 1_560_008_310
            let audiences = entries.compactMap { $0["aud"] as? String }
            let configuration = try AppleSignInConfiguration(
                bundleIDs: Array(Set(audiences)).sorted().map { ClientID($0) },
                servicesID: ClientID("com.example.web")
            )
            let clock = FixedClock(now: Date(timeIntervalSince1970: issuedAt + 1))
            let keys = AppleKeyCache(
                source: StaticAppleKeySource(keySet: try AppleKeySet(jwks: Array(jwks))),
                clock: clock
            )
            verifier = IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
        } catch {
            fatalError("siwa-fuzz: cannot load the fixtures at \(fixturesDirectory.path): \(error)")
        }
    }

    static func base64URLDecode(_ text: String) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64) ?? Data()
    }

    static func base64URLEncode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

let harness = Harness()

/// Runs `body` to completion on the concurrency runtime and waits for it.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let semaphore = DispatchSemaphore(value: 0)
    Task {
        await body()
        semaphore.signal()
    }
    semaphore.wait()
}

/// libFuzzer's driver (`libclang_rt.fuzzer`): SwiftPM gives the executable its own `main`, so this one starts
/// libFuzzer with the command line instead of libFuzzer's `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum SiwaFuzz {
    static func main() {
        _ = harness  // load the fixtures before the clock starts
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
    }
}

func fuzzOneInput(_ pointer: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = pointer, size > 0 else { return 0 }
    let mode = data[0] % 6
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let verifier = harness.verifier
    switch mode {
    case 0:
        let token = String(decoding: input, as: UTF8.self)
        blocking {
            _ = try? await verifier.verify(token, expectedNonce: "nonce")
            _ = await verifier.inspect(token, expectedNonce: "nonce")
        }
    case 1:
        blocking { _ = try? await verifier.verifyNotification(body: input) }
    case 2:
        _ = try? AuthorizationCallback(formBody: input)
    case 3:
        let token = harness.header + "." + Harness.base64URLEncode(input) + "." + harness.signature
        blocking { _ = await verifier.inspect(token, expectedNonce: "nonce") }
    case 4:
        _ = try? AuthorizationUser(json: String(decoding: input, as: UTF8.self))
    default:
        _ = try? AppleKeySet(jwks: input)
    }
    return 0
}
