import AccountStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

@testable import AuthServer

/// siwa facing the internet: connection caps and request deadlines, rate limits on every writing route keyed on the
/// real client (also behind a proxy), and bounds on what one client can make the server keep.
@Suite("Server: limits at the edge")
struct EdgeLimitsTests {
    private static func port(_ harness: ServerHarness) throws -> Int {
        try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
    }

    private static let healthz = "GET /healthz HTTP/1.1\r\nHost: siwa\r\n\r\n"

    // MARK: Connections

    @Test func connectionsOverTheCapsAreClosedAtOnceAndOthersKeepWorking() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.connections.maximumConnections = 8
        configuration.connections.maximumConnectionsPerAddress = 3
        configuration.connections.requestHeadTimeout = .seconds(120)
        try await ServerHarness.run(configuration: configuration) { harness in
            let port = try Self.port(harness)
            // One address opens 4 connections: one (whichever the server counts last) is refused at once, not
            // queued; the other 3 are served.
            let first = try (0..<4).map { _ in try RawSocketConnection(port: port, from: "127.0.0.2") }
            var servedFromOne = 0
            for connection in first {
                _ = connection.send(Self.healthz)
                if try await connection.readResponse(timeout: .seconds(10))?.status == 200 { servedFromOne += 1 }
            }
            #expect(servedFromOne == 3, "the per-address cap admits 3 (served \(servedFromOne))")

            // Ten more from ten other addresses: the total cap (8, the harness's own client included) admits a few,
            // the rest are closed; every admitted one is served.
            let crowd = try (10..<20).map { try RawSocketConnection(port: port, from: "127.0.0.\($0)") }
            var served = 0
            for connection in crowd {
                _ = connection.send(Self.healthz)
                if try await connection.readResponse(timeout: .seconds(5))?.status == 200 { served += 1 }
            }
            #expect(served >= 1, "connections under the cap are served")
            #expect(served + servedFromOne <= 8, "never more connections than the cap (served \(served))")

            // Closing connections frees their places.
            for connection in first + crowd { connection.close() }
            var servedLater = false
            for _ in 0..<50 where !servedLater {
                // The server counts a closed connection out when it notices the close: retry briefly.
                let attempt = try RawSocketConnection(port: port, from: "127.0.0.30")
                if attempt.send(Self.healthz) {
                    servedLater = try await attempt.readResponse(timeout: .seconds(1))?.status == 200
                }
            }
            #expect(servedLater, "places free up when connections close")
        }
    }

    /// The metrics listener is guarded like the public port, with caps of its own: a flood of connections to it is
    /// closed over its caps (8 per address, 32 in all) while the public port answers. Every connection asks at once and
    /// is kept open after its answer (the idle timeout is far away), so what is counted is the caps alone.
    @Test func theMetricsListenerHasCapsOfItsOwn() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.idleTimeout = .seconds(600)
        try await ServerHarness.run(configuration: configuration, keepsIdleTimeout: true, metrics: true) { harness in
            let metricsPort = try await harness.metricsPort.port()
            let publicPort = try Self.port(harness)
            func ask(from address: String) async throws -> (RawSocketConnection, served: Bool) {
                let connection = try RawSocketConnection(port: metricsPort, from: address)
                guard connection.send(Self.healthz) else { return (connection, false) }
                return (connection, try await connection.readResponse(timeout: .seconds(30))?.status == 200)
            }
            // Nine from one address: the ninth is closed at once.
            var open: [RawSocketConnection] = []
            var servedFromOne = 0
            for _ in 0..<9 {
                let (connection, served) = try await ask(from: "127.0.0.2")
                open.append(connection)
                if served { servedFromOne += 1 }
            }
            #expect(servedFromOne == 8, "the per-address cap of the metrics listener admits 8 (\(servedFromOne))")
            // Forty more from five other addresses: 32 in all are served.
            var served = 0
            for address in 3..<8 {
                for _ in 0..<8 {
                    let (connection, answered) = try await ask(from: "127.0.0.\(address)")
                    open.append(connection)
                    if answered { served += 1 }
                }
            }
            #expect(servedFromOne + served == 32, "the metrics listener's total cap (served \(servedFromOne + served))")
            // Meanwhile the public port answers, its places untouched.
            for _ in 0..<5 {
                let probe = try RawSocketConnection(port: publicPort)
                #expect(probe.send(Self.healthz))
                #expect(try await probe.readResponse(timeout: .seconds(30))?.status == 200)
                probe.close()
            }
            for connection in open { connection.close() }
        }
    }

    /// The metrics listener closes a half-sent head at the public port's head deadline and an idle connection at its
    /// idle timeout.
    @Test func theMetricsListenerHasThePublicPortsDeadlines() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.connections.requestHeadTimeout = .seconds(1)
        configuration.idleTimeout = .seconds(2)
        try await ServerHarness.run(configuration: configuration, keepsIdleTimeout: true, metrics: true) { harness in
            let metricsPort = try await harness.metricsPort.port()
            let half = try RawSocketConnection(port: metricsPort, from: "127.0.0.9")
            #expect(half.send("GET /metr"))
            #expect(try await half.readUntilClosed(timeout: .seconds(60)).closedByServer, "a half-sent head stays open")
            let idle = try RawSocketConnection(port: metricsPort, from: "127.0.0.10")
            #expect(
                try await idle.readUntilClosed(timeout: .seconds(60)).closedByServer,
                "an idle connection stays open"
            )
        }
    }

    @Test func aRequestHeadOrBodyTrickledWithinTheIdleTimeoutIsCutOffAtItsDeadline() async throws {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.connections.requestHeadTimeout = .seconds(1)
        configuration.connections.requestBodyTimeout = .seconds(2)
        configuration.idleTimeout = .seconds(30)
        try await ServerHarness.run(configuration: configuration, keepsIdleTimeout: true) { harness in
            let port = try Self.port(harness)
            // Slow head: a byte every 100 ms keeps the idle timeout (30 s) from ever firing; 80 bytes over 8 s are
            // well inside the idle timeout and well past the head deadline.
            let head = try RawSocketConnection(port: port)
            var headClosed = false
            for byte in "GET /healthz HTTP/1.1\r\nHost: siwa\r\nX-Slow: \(String(repeating: "a", count: 45))" {
                guard head.send(String(byte)) else {
                    headClosed = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if !headClosed { headClosed = try await head.readUntilClosed(timeout: .seconds(5)).closedByServer }
            #expect(headClosed, "a trickled head is cut off")

            // Slow body: a complete head, then one body byte every 100 ms.
            let body = try RawSocketConnection(port: port)
            #expect(body.send("POST /auth/refresh HTTP/1.1\r\nHost: siwa\r\nContent-Length: 1000\r\n\r\n"))
            var bodyClosed = false
            for _ in 0..<80 {
                guard body.send("a") else {
                    bodyClosed = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if !bodyClosed { bodyClosed = try await body.readUntilClosed(timeout: .seconds(5)).closedByServer }
            #expect(bodyClosed, "a trickled body is cut off")

            // A prompt client is served, also for a second request after a pause longer than the head deadline (the
            // deadline runs from a request's first byte, not while a kept-alive connection waits).
            let prompt = try RawSocketConnection(port: port)
            #expect(prompt.send(Self.healthz))
            #expect(try await prompt.readResponse(timeout: .seconds(10))?.status == 200)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(prompt.send(Self.healthz))
            #expect(try await prompt.readResponse(timeout: .seconds(10))?.status == 200)
        }
    }

    // MARK: Rate limits on every writing route, by the real client

    private static func limited(trusting proxies: [String] = []) throws -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(
            authRateLimit: .init(requestsPerSecond: 0.001, burst: 3),
            storeRefreshInterval: .milliseconds(200)
        )
        configuration.compatibility = .all
        configuration.trustedProxies = try TrustedProxies(proxies)
        return configuration
    }

    private static func post(
        _ harness: ServerHarness,
        _ path: String,
        forwardedFor: String? = nil
    ) async throws -> HTTPResponse.Status {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let forwardedFor { headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor }
        return try await harness.server.execute(
            uri: path,
            method: .post,
            headers: headers,
            body: ByteBuffer(string: "{}")
        ).status
    }

    @Test func everyRouteThatSignsInOrRefreshesSharesTheClientsBudget() async throws {
        try await ServerHarness.run(configuration: try Self.limited()) { harness in
            // Routes of four contracts, each outside /auth/* for three of them.
            for path in ["/api/auth/apple", "/api/auth/siwa", "/api/GetAccessToken"] {
                let status1 = try await Self.post(harness, path)
                #expect(status1 != .tooManyRequests, "\(path)")
            }
            let status2 = try await Self.post(harness, "/api/auth/refresh")
            #expect(status2 == .tooManyRequests)
            let status3 = try await Self.post(harness, "/auth/apple/nonce")
            #expect(status3 == .tooManyRequests)
        }
    }

    /// Every route spends what its declaration says, whatever its method: each route that verifies a credential, signs
    /// in, rotates a refresh token or writes answers 429 past its client's burst (GETs among them: the Vapor
    /// tutorial's sign-in page renews from the refresh cookie, ServiceStack's `Authenticate` may sign out), and a
    /// route that only reads never does.
    @Test func everyRouteSpendsWhatItDeclaresWhateverItsMethod() async throws {
        var configuration = RouteAccessMatrixTests.configuration()
        configuration.authRateLimit = .init(requestsPerSecond: 0.001, burst: 3)
        configuration.notificationRateLimit = .init(requestsPerSecond: 0.001, burst: 3)
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        let (_, policies) = try await RouteAccessMatrixTests.declared(configuration)
        for (method, path) in [("GET", "/web/auth/siwa/sign-in"), ("GET", "/api/Authenticate"), ("GET", "/auth")] {
            let access = try #require(policies[RegisteredRoute(method: method, path: path)], "\(method) \(path)")
            #expect(access.declaredBudget == .client, "\(method) \(path) signs in, renews or signs out")
        }
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            var failures: [String] = []
            for (index, route) in policies.keys.sorted().enumerated() {
                let budget = try #require(policies[route]?.declaredBudget)
                // A client of its own per route, so that each route's count starts at its burst.
                let client = "198.18.\(index / 200).\(index % 200 + 1)"
                let path = route.path.replacing("{id}", with: "0190a5e2-6b1c-7000-8000-000000000001")
                    .replacing("{action}", with: "disable").replacing("{name}", with: "budget")
                var statuses: [UInt] = []
                for _ in 0..<4 {
                    var headers: HTTPFields = [HTTPField.Name("X-Forwarded-For")!: client]
                    var body: ByteBuffer?
                    if route.method != "GET" {
                        headers[.contentType] = "application/json"
                        body = ByteBuffer(string: "{}")
                    }
                    let answer = try await harness.server.execute(
                        uri: path,
                        method: HTTPRequest.Method(route.method) ?? .get,
                        headers: headers,
                        body: body
                    )
                    statuses.append(UInt(answer.status.code))
                }
                let limited = statuses.last == 429
                if limited != (budget != .none) || statuses.dropLast().contains(429) {
                    failures.append("\(route) spends \(budget.rawValue), answered \(statuses)")
                }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        }
    }

    @Test func behindATrustedProxyEachClientHasItsOwnBudget() async throws {
        try await ServerHarness.run(configuration: try Self.limited(trusting: ["127.0.0.1"])) { harness in
            for _ in 0..<3 {
                let status4 = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "203.0.113.7")
                #expect(status4 == .ok)
            }
            let status5 = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "203.0.113.7")
            #expect(status5 == .tooManyRequests)
            // Another user behind the same proxy is not refused for the first one's requests.
            let status6 = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "203.0.113.8")
            #expect(status6 == .ok)
            // A client cannot escape by putting another address on the left: the proxy appends the real one.
            let spoofed = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "198.51.100.1, 203.0.113.7")
            #expect(spoofed == .tooManyRequests)
        }
    }

    @Test func aProxyEntryThatIsNotABareAddressKeepsTheClientFromChoosingItsBudget() async throws {
        try await ServerHarness.run(configuration: try Self.limited(trusting: ["127.0.0.1"])) { harness in
            // The proxy's own entry is `unknown` (or has a port): a new address on its left must not buy a new budget.
            for index in 0..<3 {
                let status = try await Self.post(
                    harness,
                    "/auth/apple/nonce",
                    forwardedFor: "198.51.100.\(index), unknown"
                )
                #expect(status == .ok)
            }
            let unknown = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "198.51.100.9, unknown")
            #expect(unknown == .tooManyRequests, "the client chose its budget left of the proxy's `unknown`")
            for index in 0..<3 {
                let status = try await Self.post(
                    harness,
                    "/auth/apple/nonce",
                    forwardedFor: "198.51.100.\(index), 203.0.113.7:4711"
                )
                #expect(status == .ok)
            }
            let withPort = try await Self.post(
                harness,
                "/auth/apple/nonce",
                forwardedFor: "198.51.100.9, 203.0.113.7:80"
            )
            #expect(withPort == .tooManyRequests, "203.0.113.7:port is the client 203.0.113.7")
        }
    }

    @Test func forwardedHeadersFromAnUntrustedPeerAreIgnored() async throws {
        try await ServerHarness.run(configuration: try Self.limited()) { harness in
            for index in 0..<3 {
                let status = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "203.0.113.\(index)")
                #expect(status == .ok)
            }
            // A new made-up address per request does not buy a new budget.
            let status7 = try await Self.post(harness, "/auth/apple/nonce", forwardedFor: "203.0.113.99")
            #expect(status7 == .tooManyRequests)
        }
    }

    @Test func applesNotificationsHaveTheirOwnBudget() async throws {
        try await ServerHarness.run(configuration: try Self.limited()) { harness in
            for _ in 0..<3 { _ = try await Self.post(harness, "/auth/apple/nonce") }
            let status8 = try await Self.post(harness, "/auth/apple/nonce")
            #expect(status8 == .tooManyRequests)
            // The same address is out of budget for users, and Apple's delivery is still read (and refused only for
            // its content).
            let delivery = try await Self.post(harness, "/auth/apple/notifications")
            #expect(delivery == .badRequest)
        }
    }

    @Test func oneClientCanKeepOnlySoManyWebFlowsPending() async throws {
        var configuration = try Self.limited()
        configuration.authRateLimit = .init(requestsPerSecond: 1000, burst: 1000)
        configuration.maximumFlowsPerClient = 5
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            for _ in 0..<5 {
                #expect(try await harness.startWebSignIn().status == .found)
            }
            let refused = try await harness.browser(.get, "/web/auth/siwa/authorize")
            #expect(refused.status == .tooManyRequests, "flows of every contract count")
        }
    }

    // MARK: Sessions per identity token

    @Test func replayingOneIdentityTokenOpensABoundedNumberOfSessions() async throws {
        try await ServerHarness.run { harness in
            let credential = try await harness.appleCredential("replayed@example.com")
            let token = try #require(credential["identityToken"] as? String)
            var answers: [(status: HTTPResponse.Status, json: [String: Any], headers: HTTPFields)] = []
            for _ in 0..<6 {
                answers.append(try await harness.call(.post, "/auth/apple/native", json: ["identityToken": token]))
            }
            #expect(answers.prefix(3).allSatisfy { $0.status == .ok }, "a client may retry a lost answer")
            for answer in answers.dropFirst(3) {
                #expect(answer.status == .unauthorized)
                #expect(answer.json.string("error") == "identity_token_replayed")
            }
        }
    }
}

@Suite("TrustedProxies")
struct TrustedProxiesTests {
    @Test func theClientIsTheRightMostUntrustedHop() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "127.0.0.1", "fd00::/8"])
        #expect(proxies.contains("10.1.2.3") && proxies.contains("::ffff:127.0.0.1") && proxies.contains("fd12::1"))
        #expect(!proxies.contains("11.0.0.1") && !proxies.contains("fe80::1"))
        let xff: HTTPFields = [HTTPField.Name("X-Forwarded-For")!: "1.1.1.1, 203.0.113.9, 10.0.0.2"]
        #expect(proxies.clientAddress(peer: "10.0.0.1", headers: xff) == "203.0.113.9")
        #expect(proxies.clientAddress(peer: "198.51.100.4", headers: xff) == "198.51.100.4", "untrusted peer")
        let forwarded: HTTPFields = [
            HTTPField.Name("Forwarded")!: #"for=192.0.2.60;proto=https, for="[2001:db8::1]:4711""#
        ]
        // The header the proxy does not write is a client's: never read.
        #expect(proxies.clientAddress(peer: "127.0.0.1", headers: forwarded) == "127.0.0.1")
        let rfc7239 = try TrustedProxies(["127.0.0.1"], header: .forwarded)
        #expect(rfc7239.clientAddress(peer: "127.0.0.1", headers: forwarded) == "2001:db8::1")
        #expect(rfc7239.clientAddress(peer: "127.0.0.1", headers: xff) == "127.0.0.1")
        #expect(proxies.clientAddress(peer: "127.0.0.1", headers: [:]) == "127.0.0.1")
        #expect(throws: TrustedProxies.Failure.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: TrustedProxies.Failure.self) { try TrustedProxies(["proxy.internal"]) }
    }

    /// The right-most hop that is not a trusted proxy is the client whatever its form: an address with a port is read
    /// as the address, anything else is taken as written, and never an entry a client wrote to its left.
    @Test func theRightMostUntrustedHopIsTheClientWhateverItsForm() throws {
        let proxies = try TrustedProxies(["10.0.0.0/8", "127.0.0.1"])
        let xff = HTTPField.Name("X-Forwarded-For")!
        let cases: [(String, String)] = [
            ("203.0.113.50, 198.51.100.7:4711", "198.51.100.7"),
            ("203.0.113.50, [2001:db8::9]:4711", "2001:db8::9"),
            ("203.0.113.50, [2001:db8::9]", "2001:db8::9"),
            ("203.0.113.50, 2001:db8::9", "2001:db8::9"),
            ("203.0.113.50, unknown", "unknown"),
            ("203.0.113.50, _hidden", "_hidden"),
            ("203.0.113.50, not an address", "not an address"),
            ("203.0.113.50, 198.51.100.7:4711, 10.0.0.2:5555", "198.51.100.7"),
            ("203.0.113.50, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
            ("203.0.113.50,, 198.51.100.7", "198.51.100.7"),
        ]
        for (header, client) in cases {
            #expect(proxies.clientAddress(peer: "10.0.0.1", headers: [xff: header]) == client, "\(header)")
        }
        // Across header lines, the last line holds the right-most hops.
        var lines = HTTPFields()
        lines.append(HTTPField(name: xff, value: "203.0.113.50"))
        lines.append(HTTPField(name: xff, value: "unknown"))
        #expect(proxies.clientAddress(peer: "10.0.0.1", headers: lines) == "unknown")

        let rfc7239 = try TrustedProxies(["10.0.0.0/8", "127.0.0.1"], header: .forwarded)
        let forwarded = HTTPField.Name("Forwarded")!
        let elements: [(String, String)] = [
            (#"for=203.0.113.50, for=_hidden"#, "_hidden"),
            (#"for=203.0.113.50, for="_hidden""#, "_hidden"),
            (#"for=203.0.113.50, for=unknown"#, "unknown"),
            (#"for=203.0.113.50, for="[2001:db8::1]:4711""#, "2001:db8::1"),
            (#"for=203.0.113.50, for="198.51.100.7:4711";proto=https"#, "198.51.100.7"),
            (#"for=203.0.113.50, For=198.51.100.7"#, "198.51.100.7"),
            (#"for=203.0.113.50, for="198.51.100.7:_port", for=10.0.0.2"#, "198.51.100.7"),
            (#"for=203.0.113.50, for=_hidden;by=10.0.0.2, for="10.0.0.3:8080""#, "_hidden"),
        ]
        for (header, client) in elements {
            #expect(rfc7239.clientAddress(peer: "127.0.0.1", headers: [forwarded: header]) == client, "\(header)")
        }
        // Every hop trusted: the left-most one.
        #expect(proxies.clientAddress(peer: "10.0.0.1", headers: [xff: "10.0.0.3, 10.0.0.2:80"]) == "10.0.0.3")
    }
}
