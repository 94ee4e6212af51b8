import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// `Strict-Transport-Security` on the answers of a siwa that serves https itself (a real TLS server, asked with curl),
/// and never on plain http, where a proxy in front terminates TLS and sends it.
@Suite(
    "Server: HSTS",
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"),
        "openssl or curl is not installed: run through scripts/with-chromium (scripts/test does)"
    )
)
struct StrictTransportSecurityTests {
    private static let header = HTTPField.Name("Strict-Transport-Security")!

    /// A self-signed certificate for 127.0.0.1, which curl is told to trust alone.
    static func certificate(in folder: TemporaryFolder) async throws -> (certificate: String, key: String) {
        let (status, _, errors) = try await runChildProcess(
            "/usr/bin/openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            directory: folder.path
        )
        try #require(status == 0, "\(String(decoding: errors, as: UTF8.self))")
        return (folder.url.appendingPathComponent("cert.pem").path, folder.url.appendingPathComponent("key.pem").path)
    }

    /// The `Strict-Transport-Security` values of an https answer (one per header line), and its status.
    static func hsts(
        _ method: String,
        _ url: String,
        trusting certificate: String
    ) async throws -> (
        status: Int?, values: [String]
    ) {
        let (status, out, errors) = try await runChildProcess(
            "/usr/bin/curl",
            arguments: [
                "--silent", "--show-error", "--output", "/dev/null", "--dump-header", "-", "--cacert", certificate,
                "--max-time", "10", "-X", method, url,
            ]
        )
        try #require(status == 0, "curl \(url): \(String(decoding: errors, as: UTF8.self))")
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\r\n")
        let code = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        let values = lines.compactMap { line -> String? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "strict-transport-security" else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }
        return (code, values)
    }

    /// Runs `body` with siwa serving https itself on a loopback port, with `configuration`.
    private static func withHTTPS(
        _ configuration: AuthServerConfiguration = WebSignInTests.configuration(),
        _ body: @escaping @Sendable (_ origin: String, _ certificate: String) async throws -> Void
    ) async throws {
        let folder = try TemporaryFolder("siwa-hsts")
        let files = try await certificate(in: folder)
        let tls = try ServerTLS(certificateFile: files.certificate, keyFile: files.key)
        let ownOrigin: @Sendable (Int) -> String = { "https://127.0.0.1:\($0)" }
        try await ServerHarness.run(configuration: configuration, web: true, publicOrigin: ownOrigin, tls: tls) {
            harness in
            try await body("https://127.0.0.1:\(harness.listenPort)", files.certificate)
            withExtendedLifetime(folder) {}
        }
    }

    @Test func httpsAnswersCarryHSTSForAYearByDefault() async throws {
        try await Self.withHTTPS { origin, certificate in
            for (method, path, status) in [("GET", "/healthz", 200), ("GET", "/login", 200), ("GET", "/nowhere", 404)] {
                let answer = try await Self.hsts(method, origin + path, trusting: certificate)
                #expect(answer.status == status, "\(path)")
                #expect(answer.values == ["max-age=31536000"], "\(method) \(path)")
            }
            let refused = try await Self.hsts("POST", origin + "/auth/refresh", trusting: certificate)
            #expect((400..<500).contains(refused.status ?? 0), "\(String(describing: refused.status))")
            #expect(refused.values == ["max-age=31536000"], "an error answer carries it too")
        }
    }

    @Test(arguments: [(600, ["max-age=600"]), (nil, [])] as [(Int?, [String])])
    func theMaxAgeIsASettingAndNilTurnsItOff(maxAge: Int?, expected: [String]) async throws {
        var configuration = WebSignInTests.configuration()
        configuration.hstsMaxAge = maxAge
        try await Self.withHTTPS(configuration) { origin, certificate in
            let answer = try await Self.hsts("GET", origin + "/healthz", trusting: certificate)
            #expect(answer.status == 200)
            #expect(answer.values == expected)
        }
    }

    @Test func plainHTTPAnswersCarryNoHSTSEvenBehindAnHTTPSProxy() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.publicURL = "https://auth.example.com"
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        try await ServerHarness.run(configuration: configuration) { harness in
            let answer = try await harness.server.execute(
                uri: "/healthz",
                method: .get,
                headers: [
                    HTTPField.Name("X-Forwarded-Proto")!: "https", HTTPField.Name("X-Forwarded-For")!: "192.0.2.1",
                ],
                body: nil
            )
            #expect(answer.status == .ok)
            #expect(answer.headers[Self.header] == nil, "the proxy that terminates TLS sends HSTS, not siwa")
        }
    }
}
