#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where siwa may deliver webhooks: the rules an endpoint's URL, and every address its host resolves to, must pass.
///
/// A webhook is a request siwa makes on behalf of whoever wrote the configuration, to a host it names: without these
/// rules an endpoint could point into the operator's own network (a database's admin port, a cloud's metadata
/// service at 169.254.169.254). So the URL is https, carries no credentials, and its host (an address literal here,
/// every resolved address at delivery) is outside the refused ranges unless the operator lists its network.
struct WebhookTargetRules: Sendable {
    /// Networks delivered to although ``refused`` lists them (an app backend on the operator's own network).
    var allowedNetworks: AddressRanges = .none
    /// Plain `http` to a loopback host, for development only: everything else is `https`.
    var allowsPlainHTTPToLoopback = false

    /// Loopback, the unspecified address, private networks (RFC 1918), shared address space (RFC 6598),
    /// link-local (the cloud metadata services), IETF protocol assignments, documentation and benchmarking ranges,
    /// multicast and reserved space, broadcast; IPv6's loopback, unspecified, unique-local, link-local, site-local,
    /// multicast, documentation, NAT64 and 6to4 prefixes (which reach IPv4 addresses through a gateway).
    static let refused: AddressRanges = {
        let ranges = [
            "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
            "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
            "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32", "::/128", "::1/128",
            "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10",
            "fec0::/10", "ff00::/8",
        ]
        do {
            return try AddressRanges(ranges)
        } catch {
            preconditionFailure("a refused webhook range does not parse: \(error)")
        }
    }()

    /// Loopback only: where ``allowsPlainHTTPToLoopback`` lets plain `http` go.
    static let loopback: AddressRanges = {
        do {
            return try AddressRanges(["127.0.0.0/8", "::1/128"])
        } catch {
            preconditionFailure("the loopback ranges do not parse: \(error)")
        }
    }()

    /// Whether siwa may connect to `address` (textual IPv4 or IPv6; an IPv4-mapped IPv6 address counts as its IPv4
    /// address). Anything that is not an address is refused.
    func admits(address: String) -> Bool {
        guard AddressRanges.parse(address) != nil else { return false }
        return allowedNetworks.contains(address) || !Self.refused.contains(address)
    }

    /// The endpoint URL, checked: `https` (plain `http` only to a loopback address, with
    /// ``allowsPlainHTTPToLoopback``), a host, no user name or password, no fragment, and a host that is an address
    /// ``admits(address:)`` (a name is checked address by address when siwa connects).
    /// - Parameter text: the URL as configured.
    /// - Returns: the URL.
    /// - Throws: ``WebhookTargetRefusal`` saying what is wrong, the URL named without its query.
    func checkedURL(_ text: String) throws(WebhookTargetRefusal) -> URL {
        guard let components = URLComponents(string: text), let url = components.url,
            let scheme = components.scheme?.lowercased()
        else { throw WebhookTargetRefusal("is not a URL") }
        guard let host = components.host, !host.isEmpty else { throw WebhookTargetRefusal("names no host") }
        guard components.user == nil, components.password == nil else {
            throw WebhookTargetRefusal(
                "carries a user name or password: give the endpoint's secret instead (the URL is logged and shown)"
            )
        }
        guard components.fragment == nil else { throw WebhookTargetRefusal("has a fragment (#…)") }
        let address = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let isAddress = AddressRanges.parse(address) != nil
        switch scheme {
        case "https":
            break
        case "http" where allowsPlainHTTPToLoopback:
            guard isAddress, Self.loopback.contains(address) else {
                throw WebhookTargetRefusal(
                    "is plain http to \(host): http is for a loopback address in development (127.0.0.1, ::1) only"
                )
            }
            return url
        case "http":
            throw WebhookTargetRefusal("is plain http: an endpoint must be https")
        default:
            throw WebhookTargetRefusal("has the scheme \(scheme): an endpoint must be https")
        }
        if isAddress, !admits(address: address) {
            throw WebhookTargetRefusal(
                "points to \(address), in a loopback, private, link-local or reserved range: list its network in the "
                    + "allowed networks if the app's backend really is there"
            )
        }
        if !isAddress, host.lowercased() == "localhost" || host.lowercased().hasSuffix(".localhost") {
            throw WebhookTargetRefusal("points to \(host), this machine")
        }
        return url
    }
}

/// Why an endpoint URL is refused.
struct WebhookTargetRefusal: Error, CustomStringConvertible {
    let reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}
