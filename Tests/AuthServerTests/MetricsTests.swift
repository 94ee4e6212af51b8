import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// `GET /metrics` on the metrics listener: Prometheus text counting requests by route, sign-ins, refreshes, refused
/// tokens and Apple calls.
@Suite("MetricsTests")
struct MetricsTests {
    @Test func countsSignInsRefreshesFailuresAndRequestsByRoute() async throws {
        try await ServerHarness.run(metrics: true) { harness in
            let first = try await harness.signIn("metrics@example.com", givenName: "Mia")
            #expect(first.status == .ok)
            let again = try await harness.signIn("metrics@example.com")
            #expect(again.status == .ok)
            let refreshToken = try #require(again.json.string("refreshToken"))
            let rotated = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
            #expect(rotated.status == .ok)
            let me = try await harness.call(.get, "/api/me", bearer: rotated.json.string("accessToken"))
            #expect(me.status == .ok)
            harness.clock.advance(by: 10)  // past the grace window
            let reused = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
            #expect(reused.json.string("error") == "refresh_token_reused")
            let expired = try await harness.appleCredential("late@example.com", expiresIn: -300)
            let refused = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": try #require(expired.string("identityToken"))]
            )
            #expect(refused.json.string("error") == "identity_token_expired")
            let garbage = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": "a.b.c"])
            #expect(garbage.json.string("error") == "identity_token_malformed")
            let missing = try await harness.call(.get, "/no/such/path/12345")
            #expect(missing.status == .notFound)

            let (metrics, headers) = try await scrape(harness)
            #expect(headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")

            #expect(metrics.value("siwa_sign_ins_total", ["flow": "native", "user": "new"]) == 1)
            #expect(metrics.value("siwa_sign_ins_total", ["flow": "native", "user": "returning"]) == 1)
            #expect(metrics.value("siwa_sign_ins_total", ["flow": "web", "user": "new"]) == 0)
            #expect(metrics.value("siwa_refreshes_total", ["outcome": "rotated"]) == 1)
            #expect(metrics.value("siwa_refreshes_total", ["outcome": "reused"]) == 1)
            #expect(metrics.value("siwa_refreshes_total", ["outcome": "expired"]) == 0)
            #expect(
                metrics.value("siwa_identity_token_failures_total", ["reason": "identity_token_expired"]) == 1
            )
            #expect(
                metrics.value("siwa_identity_token_failures_total", ["reason": "identity_token_malformed"]) == 1
            )
            #expect(metrics.value("siwa_apple_jwks_fetches_total", ["outcome": "ok"]) == 1)
            #expect(metrics.value("siwa_apple_jwks_fetches_total", ["outcome": "failed"]) == 0)
            #expect(metrics.value("siwa_apple_code_exchange_failures_total", [:]) == 0)

            let native = ["method": "POST", "route": "/auth/apple/native"]
            #expect(metrics.value("siwa_http_requests_total", native.merging(["status": "200"]) { $1 }) == 2)
            #expect(metrics.value("siwa_http_requests_total", native.merging(["status": "401"]) { $1 }) == 2)
            let refresh = ["method": "POST", "route": "/auth/refresh"]
            #expect(metrics.value("siwa_http_requests_total", refresh.merging(["status": "200"]) { $1 }) == 1)
            #expect(metrics.value("siwa_http_requests_total", refresh.merging(["status": "401"]) { $1 }) == 1)
            #expect(
                metrics.value("siwa_http_requests_total", ["method": "GET", "route": "/api/me", "status": "200"]) == 1
            )
            #expect(
                metrics.value("siwa_http_requests_total", ["method": "GET", "route": "unmatched", "status": "404"])
                    == 1
            )
            // Routes are patterns, never raw paths: an unknown path adds no series of its own.
            #expect(!metrics.samples.contains { $0.labels.values.contains { $0.contains("no/such") } })
            #expect(metrics.value("siwa_http_request_duration_seconds_count", ["route": "/api/me"]) == 1)
            #expect(metrics.value("siwa_http_request_duration_seconds_count", ["route": "/auth/apple/native"]) == 4)
            #expect(
                metrics.value("siwa_http_request_duration_seconds_bucket", ["route": "/api/me", "le": "+Inf"]) == 1
            )
            #expect(try #require(metrics.value("siwa_http_request_duration_seconds_sum", ["route": "/api/me"])) > 0)

            // Scrapes are not the public port's requests: they count nowhere.
            let (next, _) = try await scrape(harness)
            #expect(!next.samples.contains { $0.labels["route"] == "/metrics" })
        }
    }

    @Test func failedCodeExchangeIsCounted() async throws {
        try await ServerHarness.run(metrics: true) { harness in
            try await harness.emulator("/emulator/faults", ["endpoint": "token", "mode": "error"])
            let answer = try await harness.signIn("fault@example.com")
            #expect(answer.status == .ok)
            let (metrics, _) = try await scrape(harness)
            #expect(metrics.value("siwa_apple_code_exchange_failures_total", [:]) == 1)
            #expect(metrics.value("siwa_sign_ins_total", ["flow": "native", "user": "new"]) == 1)
        }
    }

    /// What the runbook reads: Apple's calls by outcome and their time, connections a cap closed, the revocations not
    /// confirmed, the keys' ages and the store's time.
    @Test func theRunbooksMetricsAreThere() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.connections.maximumConnectionsPerAddress = 2
        try await ServerHarness.run(configuration: configuration, metrics: true) { harness in
            // Two connections from one address, each admitted (it answered a request: connections are admitted on
            // several event loops, not in the order they were opened); a third is closed at once, its refusal
            // counted before the close.
            var held: [RawSocketConnection] = []
            for _ in 0..<2 {
                let connection = try RawSocketConnection(port: harness.listenPort, from: "127.0.0.9")
                #expect(connection.send("GET /healthz HTTP/1.1\r\nHost: siwa.test\r\n\r\n"))
                #expect(try await connection.readResponse(timeout: .seconds(30))?.status == 200)
                held.append(connection)
            }
            let third = try RawSocketConnection(port: harness.listenPort, from: "127.0.0.9")
            #expect(try await third.readUntilClosed(timeout: .seconds(30)).closedByServer)
            for connection in held + [third] { connection.close() }

            let signIn = try await harness.signIn("runbook@example.com")
            #expect(signIn.status == .ok)
            try await harness.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "error"])
            let deleted = try await harness.call(.delete, "/api/me", bearer: signIn.json.string("accessToken"))
            #expect(deleted.status == .noContent)

            let (metrics, _) = try await scrape(harness)
            #expect(metrics.value("siwa_connections_refused_total", ["cap": "address"]) == 1)
            #expect(metrics.value("siwa_connections_refused_total", ["cap": "total"]) == 0)
            #expect(metrics.value("siwa_apple_calls_total", ["call": "exchange", "outcome": "ok"]) == 1)
            #expect(
                metrics.value("siwa_apple_calls_total", ["call": "revoke", "outcome": "apple_server_error"]) == 1,
                "the revocation Apple answered with a 500"
            )
            #expect(metrics.value("siwa_apple_call_duration_seconds_count", ["call": "exchange"]) == 1)
            #expect(metrics.value("siwa_apple_revocations_pending", [:]) == 1)
            // The store's time by call: the sign-in's one write, and the deletion's.
            #expect(metrics.value("siwa_store_call_duration_seconds_count", ["call": "signIn"]) == 1)
            #expect((metrics.value("siwa_store_call_duration_seconds_count", ["call": "deleteUser"]) ?? 0) >= 1)
            let signingKeyAge = try #require(metrics.value("siwa_signing_key_age_seconds", [:]))
            #expect(signingKeyAge >= 0)
            #expect(metrics.value("siwa_data_key_age_seconds", [:]) != nil)
        }
    }

    /// The metrics have a listener of their own: publishing the public port (a proxy forwarding every path, as the
    /// deployment guide's nginx does) never publishes them.
    @Test func thePublicPortNeverAnswersMetrics() async throws {
        try await ServerHarness.run(metrics: true) { harness in
            #expect(try await harness.signIn("public@example.com").status == .ok)
            let publicPort = try await harness.server.execute(uri: "/metrics", method: .get)
            #expect(publicPort.status == .notFound)
            #expect(!String(buffer: publicPort.body).contains("siwa_"))
            #expect(try await harness.metrics("/metrics").status == .ok)
            #expect(try await harness.metrics("/healthz").status == .ok)
            // Nothing else is served there.
            #expect(try await harness.metrics("/api/me").status == .notFound)
            #expect(try await harness.metrics("/admin").status == .notFound)
        }
    }

    @Test func withoutAListenerNothingAnswersMetrics() async throws {
        try await ServerHarness.run { harness in
            #expect(try await harness.signIn("off@example.com").status == .ok)
            let response = try await harness.server.execute(uri: "/metrics", method: .get)
            #expect(response.status == .notFound)
        }
    }

    // MARK: Helpers

    /// `GET /metrics` on the metrics listener, parsed.
    private func scrape(_ harness: ServerHarness) async throws -> (PrometheusText, HTTPFields) {
        let response = try await harness.metrics()
        #expect(response.status == .ok)
        return (try PrometheusText(response.body), response.headers)
    }
}

/// The samples of a Prometheus text exposition: `name{label="value",...} number` lines.
private struct PrometheusText {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct ParseError: Error, CustomStringConvertible {
        var line: String
        var description: String { "not a sample line: \(line)" }
    }

    var samples: [Sample] = []

    init(_ text: String) throws {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
            samples.append(try Self.sample(String(line)))
        }
    }

    /// The value of the one sample with this name and exactly these labels; `nil` when there is none.
    func value(_ name: String, _ labels: [String: String]) -> Double? {
        let matches = samples.filter { $0.name == name && $0.labels == labels }
        return matches.count == 1 ? matches[0].value : nil
    }

    private static func sample(_ line: String) throws -> Sample {
        var rest = Substring(line)
        guard let nameEnd = rest.firstIndex(where: { $0 == "{" || $0 == " " }) else { throw ParseError(line: line) }
        let name = String(rest[..<nameEnd])
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "="), rest[rest.index(after: equals)] == "\"" else {
                    throw ParseError(line: line)
                }
                let key = String(rest[..<equals])
                rest = rest[rest.index(equals, offsetBy: 2)...]
                var value = ""
                while let character = rest.first, character != "\"" {
                    if character == "\\", let escaped = rest.dropFirst().first {
                        value.append(escaped == "n" ? "\n" : escaped)
                        rest = rest.dropFirst(2)
                    } else {
                        value.append(character)
                        rest = rest.dropFirst()
                    }
                }
                guard rest.first == "\"" else { throw ParseError(line: line) }
                rest = rest.dropFirst()
                labels[key] = value
                if rest.first == "," { rest = rest.dropFirst() }
                guard !rest.isEmpty else { throw ParseError(line: line) }
            }
            rest = rest.dropFirst()
        }
        let fields = rest.split(separator: " ")
        guard let first = fields.first, let value = Double(first) else { throw ParseError(line: line) }
        return Sample(name: name, labels: labels, value: value)
    }
}
