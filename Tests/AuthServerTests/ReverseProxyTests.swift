import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// siwa behind a real nginx (Debian's package, installed by `scripts/with-nginx`), with the proxy settings of
/// `docs/deployment/nginx-proxy.conf`: per-client rate limits must hold for every client behind the proxy, the
/// metrics must not be published, and nginx's request id must be siwa's.
@Suite(
    "Server: behind nginx",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_NGINX"] != nil,
        "SIWA_TEST_NGINX is not set: run through scripts/with-nginx (scripts/test does)"
    )
)
struct ReverseProxyTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs `body` with nginx on a loopback port, proxying to `upstreamPort`.
    /// - Parameters:
    ///   - port: nginx's port (a free one by default).
    ///   - tls: nginx terminates TLS with this certificate and key: the guide's whole site,
    ///     `docs/deployment/nginx-site.conf`, with its addresses, ports and paths changed (`redirectPort` for its
    ///     port 80).
    static func withNginx(
        upstreamPort: Int,
        port givenPort: Int? = nil,
        tls: (certificate: String, key: String)? = nil,
        redirectPort: Int? = nil,
        _ body: (Int) async throws -> Void
    ) async throws {
        let nginx = try #require(ProcessInfo.processInfo.environment["SIWA_TEST_NGINX"])
        let port = try givenPort ?? freeLoopbackPort()
        let proxySettings = repository.appendingPathComponent("docs/deployment/nginx-proxy.conf").path
        let tlsSettings = repository.appendingPathComponent("docs/deployment/nginx-tls.conf").path
        let servers: String
        if let tls {
            // The guide's site as an operator installs it, on this test's loopback ports and files.
            let site = try String(
                contentsOf: repository.appendingPathComponent("docs/deployment/nginx-site.conf"),
                encoding: .utf8
            )
            let replacements = [
                "server 127.0.0.1:8080;": "server 127.0.0.1:\(upstreamPort);",
                "listen 80;": "listen 127.0.0.1:\(try redirectPort ?? freeLoopbackPort());",
                "listen [::]:80;": "", "listen [::]:443 ssl;": "",
                "listen 443 ssl;": "listen 127.0.0.1:\(port) ssl;",
                "/etc/letsencrypt/live/auth.example.com/fullchain.pem": tls.certificate,
                "/etc/letsencrypt/live/auth.example.com/privkey.pem": tls.key,
                "/etc/nginx/siwa-tls.conf": tlsSettings, "/etc/nginx/siwa-proxy.conf": proxySettings,
            ]
            servers = replacements.reduce(site) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
            for guide in replacements.keys {
                try #require(site.contains(guide), "nginx-site.conf no longer says \(guide)")
            }
        } else {
            servers = """
                upstream siwa { server 127.0.0.1:\(upstreamPort); keepalive 16; keepalive_timeout 20s; }
                server {
                    listen 127.0.0.1:\(port);
                    client_header_timeout 10s;
                    location / {
                        proxy_pass http://siwa;
                        include \(proxySettings);
                    }
                }
                """
        }
        try await SiwaTesting.withNginx(nginx, servers: servers, port: port) { try await body(port) }
    }

    /// One request through nginx from `source`, answered with its status code.
    static func nonce(via port: Int, from source: String, forwardedFor: String? = nil) async throws -> Int? {
        let connection = try RawSocketConnection(port: port, from: source)
        var request = "POST /auth/apple/nonce HTTP/1.1\r\nHost: auth.example.com\r\nContent-Length: 0\r\n"
        if let forwardedFor { request += "X-Forwarded-For: \(forwardedFor)\r\n" }
        request += "Connection: close\r\n\r\n"
        #expect(connection.send(request))
        return try await connection.readResponse(timeout: .seconds(10))?.status
    }

    @Test func eachClientBehindTheProxyHasItsOwnRateLimit() async throws {
        var configuration = AuthServerConfiguration(
            authRateLimit: .init(requestsPerSecond: 0.001, burst: 3),
            storeRefreshInterval: .milliseconds(200)
        )
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        try await ServerHarness.run(configuration: configuration) { harness in
            let upstream = try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
            try await Self.withNginx(upstreamPort: upstream) { port in
                for _ in 0..<3 {
                    #expect(try await Self.nonce(via: port, from: "127.0.0.2") == 200)
                }
                #expect(try await Self.nonce(via: port, from: "127.0.0.2") == 429, "the busy client is limited")
                #expect(try await Self.nonce(via: port, from: "127.0.0.3") == 200, "another client is not")
                // A made-up X-Forwarded-For does not buy a fresh budget: nginx appends the real address.
                let spoofed = try await Self.nonce(via: port, from: "127.0.0.2", forwardedFor: "203.0.113.50")
                #expect(spoofed == 429)
            }
        }
    }

    /// `GET path` through nginx from 127.0.0.1, with the client's own `X-Request-Id`: the status and the answer's
    /// `X-Request-Id`.
    static func get(_ path: String, via port: Int, clientsRequestID: String) async throws -> (Int, String?) {
        let connection = try RawSocketConnection(port: port)
        #expect(
            connection.send(
                "GET \(path) HTTP/1.1\r\nHost: auth.example.com\r\nX-Request-Id: \(clientsRequestID)\r\n"
                    + "Connection: close\r\n\r\n"
            )
        )
        let answer = try #require(try await connection.readResponse(timeout: .seconds(10)))
        let id = answer.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-request-id:") }
            .map { $0.dropFirst("x-request-id:".count).trimmingCharacters(in: .whitespaces) }
        return (answer.status, id)
    }

    /// The guide's proxy configuration forwards every path, and still publishes no metrics: they are on a listener of
    /// their own. nginx's `$request_id` replaces the client's `X-Request-Id` and becomes siwa's request id.
    @Test func theGuidesProxyPublishesNoMetricsAndPassesItsRequestID() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        try await ServerHarness.run(configuration: configuration, metrics: true) { harness in
            let upstream = try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
            try await Self.withNginx(upstreamPort: upstream) { port in
                let (metrics, _) = try await Self.get("/metrics", via: port, clientsRequestID: "chosen-by-client")
                #expect(metrics == 404)
                let (health, id) = try await Self.get("/healthz", via: port, clientsRequestID: "chosen-by-client")
                #expect(health == 200)
                #expect(id?.wholeMatch(of: /[0-9a-f]{32}/) != nil, "nginx's $request_id: \(id ?? "none")")
            }
            #expect(try await harness.metrics().status == .ok, "on the metrics listener")
        }
    }

    /// nginx terminating TLS with `docs/deployment/nginx-tls.conf` sends HSTS; siwa behind it, on plain http, does not
    /// add a second one.
    @Test func nginxTerminatingTLSSendsHSTSOnce() async throws {
        let folder = try TemporaryFolder("siwa-nginx-hsts")
        let files = try await StrictTransportSecurityTests.certificate(in: folder)
        try await ServerHarness.run { harness in
            let upstream = try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
            try await Self.withNginx(upstreamPort: upstream, tls: files) { port in
                for (method, path) in [("GET", "/healthz"), ("GET", "/nowhere"), ("POST", "/auth/refresh")] {
                    let answer = try await StrictTransportSecurityTests.hsts(
                        method,
                        "https://127.0.0.1:\(port)\(path)",
                        trusting: files.certificate
                    )
                    #expect(
                        answer.values == ["max-age=31536000"],
                        "\(method) \(path) (\(String(describing: answer.status)))"
                    )
                }
            }
            withExtendedLifetime(folder) {}
        }
    }
}
