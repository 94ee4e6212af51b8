import Foundation

/// The host names the console and the control API answer to: every loopback name, and the names the emulator is
/// configured with (``EmulatorConfiguration/hostNames`` and the host of its issuer).
///
/// Any other `Host` may be a name an attacker points at 127.0.0.1 after a page of theirs loaded (DNS rebinding): to
/// the browser that page and the emulator are then one origin, so `Origin` checks pass and the page could read the
/// console and drive the control API. Refusing every name that is not the emulator's own defeats it.
struct EmulatorHostNames: Sendable {
    private let configured: Set<String>

    /// - Parameter configuration: the host names besides loopback, and the issuer whose host is one too.
    init(_ configuration: EmulatorConfiguration) {
        var names = Set(configuration.hostNames.map { Self.name(ofAuthority: $0) })
        if let issuer = URL(string: configuration.issuer)?.host, !issuer.isEmpty {
            names.insert(Self.name(ofAuthority: issuer))
        }
        self.configured = names
    }

    /// Whether `authority`, a request's `Host` (a name or address, maybe with a port), names this emulator.
    ///
    /// A request without one passes: every browser sends it, so it cannot be a rebound page's.
    func allows(authority: String?) -> Bool {
        guard let authority else { return true }
        let name = Self.name(ofAuthority: authority)
        return Self.isLoopback(name) || configured.contains(name)
    }

    /// The lowercased host of an authority, without its port or a final dot (`localhost.` is `localhost`); an IPv6
    /// address keeps its brackets.
    static func name(ofAuthority authority: String) -> String {
        var host = Substring(authority.lowercased())
        if host.hasPrefix("[") {
            if let end = host.firstIndex(of: "]") { host = host[...end] }
        } else if let colon = host.firstIndex(of: ":"), host.lastIndex(of: ":") == colon {
            host = host[..<colon]
        } else if host.contains(":") {
            host = "[\(host)]"  // a bare IPv6 address, as a configuration may name one
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        return String(host)
    }

    /// `localhost`, an address in 127.0.0.0/8, or `[::1]`.
    static func isLoopback(_ name: String) -> Bool {
        if name == "localhost" || name == "[::1]" || name == "[0:0:0:0:0:0:0:1]" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.first == "127" else { return false }
        return octets.allSatisfy { octet in
            (1...3).contains(octet.count) && octet.allSatisfy(\.isASCII) && octet.allSatisfy(\.isNumber)
                && Int(octet).map { $0 <= 255 } == true
        }
    }
}
