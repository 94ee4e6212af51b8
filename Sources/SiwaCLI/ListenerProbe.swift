import AuthServer
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Binds each listener's address for a moment before `serve` touches anything: a port another process holds (a second
/// siwa on the host, say) stops start-up naming the setting, before any migration runs or any key file is made, and
/// before the public port answers while the metrics port cannot.
enum ListenerProbe {
    /// A listener `serve` opens: its settings, by variable, and its address.
    struct Listener: Sendable {
        var name: String
        var settings: String
        var host: String
        var port: Int

        /// The metrics listener on `host`:`port`.
        static func metrics(host: String, port: Int) -> Listener {
            Listener(
                name: "the metrics listener",
                settings: "SIWA_METRICS_HOST/SIWA_METRICS_PORT",
                host: host,
                port: port
            )
        }
    }

    /// The listeners of `settings`: the public port, and the metrics listener when there is one.
    static func listeners(of settings: ServerSettings) -> [Listener] {
        var listeners = [
            Listener(name: "the public port", settings: "SIWA_HOST/SIWA_PORT", host: settings.host, port: settings.port)
        ]
        if let metrics = settings.server.metricsListener {
            listeners.append(.metrics(host: metrics.host, port: metrics.port))
        }
        return listeners
    }

    /// The problem of each listener that cannot bind its address, in words that name its settings; empty when all can.
    static func problems(_ listeners: [Listener]) async -> [String] {
        var problems: [String] = []
        for listener in listeners where listener.port != 0 {
            do {
                let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: listener.host, port: listener.port)
                    .get()
                try? await channel.close()
            } catch {
                problems.append("\(listener.settings): \(describe(listener, error))")
            }
        }
        return problems
    }

    static func describe(_ listener: Listener, _ error: any Error) -> String {
        let address = "\(listener.host):\(listener.port)"
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                return "\(listener.name) cannot listen on \(address): the port is in use by another process "
                    + "(another siwa on this host?); choose another port or stop that process"
            case EADDRNOTAVAIL:
                return "\(listener.name) cannot listen on \(address): the address is not one of this host's"
            case EACCES:
                return "\(listener.name) cannot listen on \(address): ports below 1024 need privileges"
            default: break
            }
        }
        return "\(listener.name) cannot listen on \(address): \(error)"
    }
}
