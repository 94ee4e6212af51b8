import AppleSignIn
import AppleSignInAsyncHTTPClient
import ArgumentParser
import Foundation

/// `siwa verify`: decodes an identity token or notification and runs every check, one line each.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Decode an identity token or notification payload and show each check as passed or failed.",
        discussion: """
            TOKEN is an identity token, the payload JWT of a server-to-server notification, Apple's whole \
            notification body ({"payload": "..."}), or - to read it from standard input. The token is never \
            sent anywhere; only Apple's public keys are fetched, unless --jwks names a file.

            Examples:
              siwa verify "$TOKEN" --client-id com.example.app --nonce "$RAW_NONCE"
              siwa verify "$OLD_TOKEN" --client-id com.example.app --jwks apple-jwks.json --now 1560008500
            """
    )

    @Argument(help: "The token, a notification body, or - for standard input.")
    var token: String

    @Option(
        name: .customLong("client-id"),
        help: "An allowed audience (bundle id or Services ID); repeat for several. Default: the token's own aud."
    )
    var clientIDs: [String] = []

    @Option(
        help:
            "Apple's keys: a JWKS file, or a URL (default \(SettingsCatalog.declared.apple.appleBaseURL.defaultText)/auth/keys)."
    )
    var jwks: String?

    @Option(help: "Check the times as of this Unix time instead of now.")
    var now: Int?

    @Option(help: "The raw nonce the app sent; the token's nonce must equal it or its SHA-256 hex.")
    var nonce: String?

    @Option(help: "Seconds of clock leeway for exp and iat.")
    var leeway: Int = 60

    @Flag(help: "Print JSON: header, claims, checks and the overall result.")
    var json = false

    func run() async throws {
        do {
            let token = try readToken()
            let clock: any WallClock =
                now.map { FixedWallClock(now: Date(timeIntervalSince1970: TimeInterval($0))) }
                ?? SystemWallClock()
            let keys = AppleKeyCache(source: try keySource(), clock: clock)
            var audiences = try clientIDs.enumerated().map { index, id in
                try ClientID(validating: id, setting: "--client-id[\(index)]")
            }
            let audienceFromToken = audiences.isEmpty
            if audienceFromToken {
                audiences = [ClientID(Self.audience(of: token) ?? "unknown.client.id")]
            }
            let configuration = try AppleSignInConfiguration(
                bundleIDs: audiences,
                clockLeeway: TimeInterval(leeway),
                acceptsAccountAppleIssuer: false
            )
            let verifier = IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
            let inspection = await verifier.inspect(token, expectedNonce: nonce)
            if json {
                print(Self.json(inspection))
            } else {
                printForPeople(inspection, audienceFromToken: audienceFromToken)
            }
            if !inspection.passed { throw ExitCode(1) }
        } catch let error as AppleSignInError {
            Terminal.report(error, json: json)
            throw ExitCode(2)
        }
    }

    private func readToken() throws(AppleSignInError) -> String {
        var text = token
        if text == "-" {
            var lines: [String] = []
            while let line = readLine(strippingNewline: true) { lines.append(line) }
            text = lines.joined(separator: "\n")
        }
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            // Apple's notification body: {"payload": "<JWT>"}.
            guard let object = try? JSONReader.parseObject(Array(text.utf8)),
                let payload = object["payload"]?.stringValue
            else {
                throw AppleSignInError(.malformed, "the JSON given has no \"payload\" string")
            }
            return payload
        }
        return text
    }

    private func keySource() throws(AppleSignInError) -> any AppleKeySource {
        guard let jwks else {
            return AppleKeysEndpoint(baseURL: .apple, transport: AsyncHTTPClientTransport())
        }
        if jwks.hasPrefix("https://") || jwks.hasPrefix("http://") {
            var base = jwks
            if base.hasSuffix("/auth/keys") { base.removeLast("/auth/keys".count) }
            return AppleKeysEndpoint(
                baseURL: try AppleBaseURL(base, setting: "--jwks"),
                transport: AsyncHTTPClientTransport()
            )
        }
        guard let data = FileManager.default.contents(atPath: jwks) else {
            throw .invalidConfiguration("--jwks", "cannot read the file \(jwks)")
        }
        return StaticAppleKeySource(keySet: try AppleKeySet(jwks: Array(data)))
    }

    /// The `aud` of an unverified token, to default the allowed audience to it.
    private static func audience(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(Array(parts[1].utf8)),
            let claims = try? JSONReader.parseObject(payload)
        else { return nil }
        switch claims["aud"] {
        case .string(let audience)?: return audience
        case .array(let values)?: return values.first?.stringValue
        default: return nil
        }
    }

    private func printForPeople(_ inspection: TokenInspection, audienceFromToken: Bool) {
        let terminal = Terminal()
        let kind = inspection.isNotification ? "notification" : "identity token"
        print(terminal.dim("\(kind)"))
        if let header = inspection.headerJSON { print("header  \(header)") }
        if let claims = inspection.claimsJSON { print("claims  \(claims)") }
        for check in inspection.checks {
            let name = check.name.padded(to: 10)
            switch check.outcome {
            case .success(var detail):
                if check.name == "audience", audienceFromToken { detail += " (the token's own aud: pass --client-id)" }
                print("\(terminal.green("✓ pass")) \(name) \(detail)")
            case .failure(let error):
                print("\(terminal.red("✗ FAIL")) \(name) \(error.code): \(error.reason)")
            }
        }
        let failed = inspection.checks.filter { !$0.passed }.count
        print(
            failed == 0
                ? terminal.green("valid")
                : terminal.red("invalid: \(failed) of \(inspection.checks.count) checks failed")
        )
    }

    static func json(_ inspection: TokenInspection) -> String {
        var out: [UInt8] = Array("{\"kind\":".utf8)
        JSONWriter.appendString(inspection.isNotification ? "notification" : "identityToken", to: &out)
        for (name, text) in [("header", inspection.headerJSON), ("claims", inspection.claimsJSON)] {
            out.append(contentsOf: ",\"\(name)\":".utf8)
            if let text, (try? JSONReader.parse(Array(text.utf8))) != nil {
                out.append(contentsOf: text.utf8)  // already JSON
            } else if let text {
                JSONWriter.appendString(text, to: &out)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        }
        out.append(contentsOf: ",\"checks\":[".utf8)
        for (index, check) in inspection.checks.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: "{\"name\":".utf8)
            JSONWriter.appendString(check.name, to: &out)
            switch check.outcome {
            case .success(let detail):
                out.append(contentsOf: ",\"passed\":true,\"detail\":".utf8)
                JSONWriter.appendString(detail, to: &out)
            case .failure(let error):
                out.append(contentsOf: ",\"passed\":false,\"error\":".utf8)
                JSONWriter.appendString(error.code.description, to: &out)
                out.append(contentsOf: ",\"message\":".utf8)
                JSONWriter.appendString(error.reason, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: "],\"passed\":\(inspection.passed)}".utf8)
        return String(decoding: out, as: UTF8.self)
    }
}

extension String {
    fileprivate func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
