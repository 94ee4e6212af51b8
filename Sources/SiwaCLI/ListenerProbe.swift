import AppleSignIn
import AppleSignInAsyncHTTPClient
import AuthServer
import HTTPTypes
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
        /// A path a siwa answers there, and a text only siwa's answer holds: how doctor tells a running siwa from
        /// another process.
        var probePath = "/readyz"
        var siwaMark = #""appleCredentials""#

        /// The metrics listener on `host`:`port`.
        static func metrics(host: String, port: Int) -> Listener {
            Listener(
                name: "the metrics listener",
                settings: "SIWA_METRICS_HOST/SIWA_METRICS_PORT",
                host: host,
                port: port,
                probePath: "/metrics",
                siwaMark: "# TYPE siwa_"
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
            if let error = await bindError(listener) {
                problems.append("\(listener.settings): \(describe(listener, error))")
            }
        }
        return problems
    }

    /// Why the listener's address cannot be bound now; `nil` when it can (it is closed again at once).
    static func bindError(_ listener: Listener) async -> (any Error)? {
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: listener.host, port: listener.port)
                .get()
            try? await channel.close()
            return nil
        } catch {
            return error
        }
    }

    /// Whether the process that holds the listener's port is a siwa: it answers the listener's probe path with siwa's
    /// mark, within two seconds. A wildcard host is asked on loopback.
    static func siwaAnswers(at listener: Listener, https: Bool) async -> Bool {
        let host =
            switch listener.host {
            case "0.0.0.0", "": "127.0.0.1"
            case "::": "[::1]"
            case let host where host.contains(":"): "[\(host)]"
            case let host: host
            }
        let request = HTTPRequest(
            method: .get,
            scheme: https ? "https" : "http",
            authority: "\(host):\(listener.port)",
            path: listener.probePath
        )
        guard
            let answer = try? await AsyncHTTPClientTransport(maximumResponseBytes: 1 << 20)
                .send(request, body: nil, timeout: .seconds(2))
        else { return false }
        return String(decoding: answer.body, as: UTF8.self).contains(listener.siwaMark)
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
