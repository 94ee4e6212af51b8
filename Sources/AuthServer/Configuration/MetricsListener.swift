public import NIOCore

/// The operators' listener: `GET /metrics` (Prometheus text) and `GET /healthz` on an address and port of their own,
/// apart from the public port, so that publishing the public port (through a proxy that forwards every path) never
/// publishes the metrics. It runs as a service of the application that
/// ``buildApplication(configuration:apple:store:transport:sealer:clock:host:port:logger:tls:onServerRunning:)``
/// returns; a port it cannot bind stops the application.
public struct MetricsListener: Sendable {
    /// The address to listen on (default `127.0.0.1`: only this host's scraper).
    public var host: String
    /// The port (0: any free one, which ``onServerRunning`` learns).
    public var port: Int
    /// Called once the port is bound, with the listening channel.
    public var onServerRunning: @Sendable (any Channel) async -> Void
    /// Connections open at once, apart from the public port's: a scraper or two, and a person with curl. A flood of
    /// idle connections to this port must not take the descriptors the public port needs (default 32).
    public var maximumConnections = 32
    /// Connections open at once from one address (default 8): every peer has this cap here, trusted proxies too.
    public var maximumConnectionsPerAddress = 8

    /// - Parameters:
    ///   - host: the address to listen on.
    ///   - port: the port (0: any free one).
    ///   - onServerRunning: called once the port is bound.
    public init(
        host: String = "127.0.0.1",
        port: Int,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) {
        self.host = host
        self.port = port
        self.onServerRunning = onServerRunning
    }
}
