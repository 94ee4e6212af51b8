import AuthServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SiwaTesting
import Testing

/// Slowloris: clients that open connections and send a request head slowly or never finish it neither block other
/// clients nor hold their connection past the idle timeout.
@Suite("Server: slow clients")
struct SlowClientTests {
    /// A request head cut off in the middle of a header field.
    static let halfHead = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "

    /// The idle timeout alone: the request-head deadline and the per-address cap (EdgeLimitsTests) are set out of
    /// the way, since these clients all come from 127.0.0.1.
    static func configuration(idleTimeout: Duration?) -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.idleTimeout = idleTimeout
        configuration.connections.requestHeadTimeout = .seconds(600)
        configuration.connections.maximumConnectionsPerAddress = 1_000
        return configuration
    }

    @Test func idleTimeoutIsOnByDefault() {
        #expect(AuthServerConfiguration().idleTimeout == .seconds(30))
    }

    /// The property is an order, not a duration: a new client is answered while the stalled connections are all
    /// still open. With an idle timeout of 10 minutes, a server that served it only once they were dropped would not
    /// answer within the 2 minutes the test waits (a bound for a hang, far above any load's delay).
    @Test func stalledConnectionsDoNotBlockOtherClients() async throws {
        try await ServerHarness.run(
            configuration: Self.configuration(idleTimeout: .seconds(600)),
            keepsIdleTimeout: true
        ) { harness in
            let port = try Self.port(harness)
            let stalled = try (0..<100).map { _ in try RawSocketConnection(port: port) }
            for connection in stalled { #expect(connection.send(Self.halfHead)) }

            let fresh = try RawSocketConnection(port: port)
            fresh.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let answer = try await fresh.readResponse(timeout: .seconds(120))
            #expect(answer?.status == 200, "a normal client was not answered while 100 stalled connections were open")
            let response = try await harness.server.execute(uri: "/healthz", method: .get, headers: [:], body: nil)
            #expect(response.status == .ok)
            // Every stalled connection is still open: the answer did not wait for them to be dropped.
            for (index, connection) in stalled.enumerated() {
                let closed = try await connection.readUntilClosed(timeout: .milliseconds(10)).closedByServer
                #expect(!closed, "stalled connection \(index) was closed before the idle timeout")
            }
        }
    }

    @Test func stalledConnectionIsClosedAfterTheIdleTimeout() async throws {
        try await ServerHarness.run(configuration: Self.configuration(idleTimeout: .seconds(1)), keepsIdleTimeout: true)
        { harness in
            let connection = try RawSocketConnection(port: try Self.port(harness))
            let start = ContinuousClock.now
            connection.send(Self.halfHead)
            // Waits up to 2 minutes (a bound for a hang): the check is that the server closes it, and not before the
            // idle timeout, not how soon after it on a loaded machine.
            let answer = try await connection.readUntilClosed(timeout: .seconds(120))
            let elapsed = ContinuousClock.now - start
            #expect(answer.closedByServer, "a half-sent head kept its connection for 2 minutes")
            #expect(elapsed >= .milliseconds(800), "closed after \(elapsed), before the 1 s idle timeout")
        }
    }

    /// Bytes that trickle in without ever completing the head do not count as activity: the idle timeout is also the
    /// header timeout.
    @Test func tricklingHeadIsClosedAfterTheIdleTimeout() async throws {
        try await ServerHarness.run(configuration: Self.configuration(idleTimeout: .seconds(1)), keepsIdleTimeout: true)
        { harness in
            let connection = try RawSocketConnection(port: try Self.port(harness))
            let start = ContinuousClock.now
            connection.send(Self.halfHead)
            var closed = false
            while !closed, ContinuousClock.now - start < .seconds(120) {
                // A refused send means the server has closed too.
                guard connection.send("x") else {
                    closed = true
                    break
                }
                closed = try await connection.readUntilClosed(timeout: .milliseconds(100)).closedByServer
            }
            #expect(closed, "a head trickled byte by byte kept its connection for 2 minutes")
        }
    }

    @Test func idleKeepAliveConnectionIsClosedAfterTheTimeout() async throws {
        try await ServerHarness.run(configuration: Self.configuration(idleTimeout: .seconds(1)), keepsIdleTimeout: true)
        { harness in
            // On a loaded machine the server may first read a new connection's request after the 1 s timeout has
            // closed it (the timeout runs from the connection's start): that is the feature too, so another
            // connection is tried until one is answered, and then it must be closed while it idles.
            var served: RawSocketConnection?
            for _ in 0..<20 where served == nil {
                let connection = try RawSocketConnection(port: try Self.port(harness))
                connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                if try await connection.readResponse(timeout: .seconds(10))?.status == 200 { served = connection }
            }
            let connection = try #require(served, "no connection was answered before its idle timeout")
            let start = ContinuousClock.now
            let answer = try await connection.readUntilClosed(timeout: .seconds(12))
            #expect(answer.closedByServer)
            #expect(ContinuousClock.now - start < .seconds(10))
        }
    }

    private static func port(_ harness: ServerHarness) throws -> Int {
        try #require(Int(harness.serverURL.split(separator: ":").last ?? ""))
    }
}
