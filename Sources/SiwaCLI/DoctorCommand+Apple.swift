import AppleSignIn
import AppleSignInAsyncHTTPClient
import AuthServer
import Foundation
import Logging
import Synchronization

/// `siwa doctor --apple`: the team's credentials checked live, at Apple or at the emulator the settings name.
///
/// For each client id it sends a client secret with an authorization code that cannot be valid: Apple answers
/// `invalid_grant` once it has accepted the client secret, `invalid_client` when it refuses it, and says nothing more.
/// So the finding names the likely cause from what siwa knows. Neither the secret nor the key is ever printed.
extension DoctorCommand {
    /// The code sent: never one Apple issued, so that a right client secret gets `invalid_grant`.
    static let preflightCode = "siwa-doctor-preflight.not-a-code"
    /// A clock further than this from Apple's is named as a cause (Apple refuses a secret issued in its future).
    static let clockTolerance: TimeInterval = 60

    /// Apple's answers, as the client reports them (``AppleAPICallObserver``).
    final class AnswerLog: AppleAPICallObserver {
        private let answers = Mutex<[AppleAPIAnswer]>([])
        func observe(_ answer: AppleAPIAnswer) { answers.withLock { $0.append(answer) } }
        var all: [AppleAPIAnswer] { answers.withLock { $0 } }
    }

    /// What the settings say of the credentials, for naming a likely cause.
    struct CredentialFacts {
        var teamID: String
        var keyID: String
        /// `SIWA_PRIVATE_KEY_FILE`, when the key comes from a file.
        var keyFile: String?
        /// The client ids Apple accepted the secret for.
        var passed: [String]
        /// How far the local clock is ahead of Apple's `Date` header (negative: behind), when Apple answered one.
        var clockSkew: TimeInterval?
    }

    /// The live checks, one finding per client id, then Apple's key set and clock.
    /// - Parameters:
    ///   - settings: the settings as serve reads them (`nil` when they cannot be read: nothing to check).
    ///   - keyFile: `SIWA_PRIVATE_KEY_FILE`, whose name says the key's id.
    static func checkApple(_ settings: ServerSettings?, keyFile: String?) async -> [Finding] {
        guard let settings, let apple = settings.appleIfConfigured, let credentials = apple.credentials else {
            return [
                Finding(
                    setting: "Apple",
                    ok: false,
                    message: "not checked: fix the Apple settings above first (SIWA_TEAM_ID, SIWA_KEY_ID, the key "
                        + "in SIWA_PRIVATE_KEY_FILE, a client id)"
                )
            ]
        }
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        let transport = AsyncHTTPClientTransport()
        let answers = AnswerLog()
        guard let client = settings.makeAppleClient(transport: transport, logger: logger, observer: answers) else {
            return []
        }
        let clientIDs = apple.bundleIDs + (apple.servicesID.map { [$0] } ?? [])
        var outcomes: [(clientID: ClientID, error: AppleSignInError?, took: Duration)] = []
        for clientID in clientIDs {
            let start = ContinuousClock.now
            var failure: AppleSignInError?
            do {
                _ = try await client.exchange(
                    code: preflightCode,
                    clientID: clientID,
                    redirectURI: settings.server.webCallbackURL
                )
            } catch {
                failure = error
            }
            outcomes.append((clientID, failure, ContinuousClock.now - start))
        }
        let skew = answers.all.compactMap(\.date).last.flatMap(Self.appleDate).map { Date().timeIntervalSince($0) }
        let facts = CredentialFacts(
            teamID: credentials.teamID.rawValue,
            keyID: credentials.keyID.rawValue,
            keyFile: keyFile,
            passed: outcomes.filter { $0.error?.code == .invalidGrant }.map(\.clientID.rawValue),
            clockSkew: skew
        )
        var findings = outcomes.map { outcome in
            clientFinding(
                outcome.clientID.rawValue,
                isServicesID: apple.isServicesID(outcome.clientID),
                error: outcome.error,
                took: outcome.took,
                facts: facts
            )
        }
        let (keysFinding, published) = await keySetFinding(apple.appleBaseURL, transport: transport, logger: logger)
        findings.append(keysFinding)
        if let configured = apple.configuredKeySet, let published {
            findings.append(configuredKeySetFinding(configured, published: published))
        }
        if let skew {
            findings.append(clockFinding(skew))
        }
        return findings
    }

    /// The finding of one client id's exchange of an impossible code.
    static func clientFinding(
        _ clientID: String,
        isServicesID: Bool,
        error: AppleSignInError?,
        took: Duration,
        facts: CredentialFacts
    ) -> Finding {
        let setting = "Apple client \(clientID)"
        let time = milliseconds(took)
        guard let error else {
            // Only a code Apple issued is exchanged; whatever answered this is not Apple.
            return Finding(
                setting: setting,
                ok: false,
                message:
                    "the token endpoint exchanged a code that cannot be valid (\(time)): is SIWA_APPLE_BASE_URL Apple?"
            )
        }
        if error.code == .invalidGrant {
            return Finding(
                setting: setting,
                ok: true,
                message: "Apple accepts the client secret (invalid_grant for a made-up code, as expected) in \(time)"
            )
        }
        if error.code == .invalidClient {
            let causes = likelyCauses(clientID, isServicesID: isServicesID, facts: facts)
            return Finding(
                setting: setting,
                ok: false,
                message: "Apple refuses the client secret (invalid_client) in \(time); likely cause: "
                    + causes.joined(separator: "; or ")
            )
        }
        return Finding(setting: setting, ok: false, message: "\(error.reason) (\(time))")
    }

    /// What most likely makes Apple refuse the secret for `clientID`, most likely first.
    static func likelyCauses(_ clientID: String, isServicesID: Bool, facts: CredentialFacts) -> [String] {
        var causes: [String] = []
        let fileName = facts.keyFile.map { URL(fileURLWithPath: $0).lastPathComponent }
        let fileKeyID = fileName.flatMap(Self.keyID(inFileName:))
        if let fileName, let fileKeyID, fileKeyID != facts.keyID {
            causes.append(
                "key id: the key file is \(fileName) but SIWA_KEY_ID is \(facts.keyID); Apple names the file after "
                    + "its key id, so SIWA_KEY_ID is probably \(fileKeyID)"
            )
        }
        let upper = facts.teamID.uppercased()
        if facts.teamID.count != 10 || upper != facts.teamID
            || !upper.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII })
        {
            causes.append("team id: SIWA_TEAM_ID \(facts.teamID) is not 10 upper-case letters or digits")
        }
        if let skew = facts.clockSkew, abs(skew) > clockTolerance {
            causes.append(
                "clock: this machine's clock is \(Int(abs(skew).rounded())) s \(skew > 0 ? "ahead of" : "behind") "
                    + "Apple's, and Apple refuses a client secret issued in its future or already expired"
            )
        }
        if !facts.passed.isEmpty {
            let other = isServicesID ? "a bundle id" : "a Services ID"
            causes.append(
                "client id: Apple accepts the same key and team for \(facts.passed.joined(separator: ", ")), so "
                    + "\(clientID) is the problem: it is not registered under team \(facts.teamID) (a typo, another "
                    + "team's), it is \(other) given as \(isServicesID ? "the Services ID" : "a bundle id"), or the key "
                    + "is not enabled for its primary App ID (Keys > Sign in with Apple > Configure)"
            )
        } else if causes.isEmpty {
            let keyIDAgrees =
                fileKeyID == facts.keyID ? "the key file's name agrees with SIWA_KEY_ID \(facts.keyID), so " : ""
            causes.append(
                "team id or key: \(keyIDAgrees)check that SIWA_TEAM_ID \(facts.teamID) is the team of key "
                    + "\(facts.keyID) (Membership details at developer.apple.com/account), that SIWA_KEY_ID is this "
                    + ".p8's key id, and that the key is not revoked (Keys in the developer portal)"
            )
        }
        return causes
    }

    /// `ABCDE12345` from `AuthKey_ABCDE12345.p8`.
    static func keyID(inFileName name: String) -> String? {
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
        return id.isEmpty ? nil : id
    }

    /// The finding of the local clock against Apple's `Date` header.
    static func clockFinding(_ skew: TimeInterval) -> Finding {
        let seconds = Int(abs(skew).rounded())
        if abs(skew) > clockTolerance {
            return Finding(
                setting: "Apple clock",
                ok: false,
                message: "this machine's clock is \(seconds) s \(skew > 0 ? "ahead of" : "behind") Apple's (its Date "
                    + "header): client secrets and identity tokens are checked against it; synchronise the clock (NTP)"
            )
        }
        return Finding(
            setting: "Apple clock",
            ok: true,
            message: "within \(seconds) s of Apple's (its Date header)",
            note: true
        )
    }

    /// Fetches Apple's key set once, timed; the set too when it could be fetched.
    private static func keySetFinding(
        _ baseURL: AppleBaseURL,
        transport: any HTTPTransport,
        logger: Logger
    ) async -> (Finding, AppleKeySet?) {
        let start = ContinuousClock.now
        do {
            let (keySet, _) = try await AppleKeysEndpoint(baseURL: baseURL, transport: transport, logger: logger)
                .fetchKeySet()
            let took = milliseconds(ContinuousClock.now - start)
            let finding = Finding(
                setting: "Apple keys",
                ok: !keySet.keys.isEmpty,
                message: "\(keySet.keys.count) key(s) from \(baseURL.url("/auth/keys")) in \(took)"
            )
            return (finding, keySet)
        } catch {
            let took = milliseconds(ContinuousClock.now - start)
            return (Finding(setting: "Apple keys", ok: false, message: "\(error.reason) (\(took))"), nil)
        }
    }

    /// The configured copy of Apple's key set against the keys Apple publishes now: a warning naming each `kid` the
    /// copy lacks, since a token signed by such a key fails whenever the copy is used.
    static func configuredKeySetFinding(_ configured: ConfiguredAppleKeySet, published: AppleKeySet) -> Finding {
        let missing = Set(published.keys.keys).subtracting(configured.keySet.keys.keys).sorted()
        let when =
            configured.use == .instead
            ? "always used (SIWA_APPLE_KEY_SET_MODE=instead)" : "used while Apple's key endpoint cannot be reached"
        guard missing.isEmpty else {
            return Finding(
                setting: "Apple keys copy",
                ok: false,
                message:
                    "SIWA_APPLE_KEY_SET is older than Apple's keys: it lacks kid \(missing.joined(separator: ", ")) "
                    + "that Apple publishes now, and it is \(when); copy Apple's /auth/keys into it again"
            )
        }
        return Finding(
            setting: "Apple keys copy",
            ok: true,
            message:
                "SIWA_APPLE_KEY_SET holds every key Apple publishes now (\(configured.keySet.keys.count) key(s)); \(when)",
            note: true
        )
    }

    /// An HTTP `Date` header (`Tue, 24 Nov 2026 10:00:00 GMT`).
    static func appleDate(_ header: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: header)
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}
