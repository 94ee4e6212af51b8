import Crypto
import Foundation

extension EmulatorConfiguration {
    /// Refuses what the emulator cannot run with and what Apple's developer account refuses to register: an empty id,
    /// a key that is not a P-256 public key, a client id registered twice, and a redirect URI or notification URL that
    /// is not https on a domain name (http, `localhost` and IP addresses are allowed only with
    /// ``allowLocalRedirectURIs``).
    /// - Throws: ``EmulatorConfigurationError`` naming the first such field and what to write there.
    public func validate() throws(EmulatorConfigurationError) {
        var owners: [String: String] = [:]
        for (teamIndex, team) in teams.enumerated() {
            let teamField = "teams[\(teamIndex)]"
            try Self.requireNonEmpty(team.teamID, teamField, "teamID")
            try Self.requireNonEmpty(team.keyID, teamField, "keyID")
            try Self.checkPublicKey(team.publicKeyPEM, field: "\(teamField).publicKeyPEM")
            for (clientIndex, client) in team.clients.enumerated() {
                let clientField = "\(teamField).clients[\(clientIndex)]"
                try Self.requireNonEmpty(client.clientID, clientField, "clientID")
                if let owner = owners[client.clientID] {
                    throw EmulatorConfigurationError(
                        field: "\(clientField).clientID",
                        problem: "is \(client.clientID), which \(owner) registers already",
                        remedy: "each bundle id and Services ID once, in the team that owns it"
                    )
                }
                owners[client.clientID] = teamField
                for (index, uri) in client.redirectURIs.enumerated() {
                    try checkRegisteredURL(
                        uri,
                        field: "\(clientField).redirectURIs[\(index)]",
                        path: "auth/apple/callback"
                    )
                }
                if let url = client.notificationURL {
                    try checkRegisteredURL(
                        url,
                        field: "\(clientField).notificationURL",
                        path: "auth/apple/notifications"
                    )
                }
            }
        }
    }

    private static func requireNonEmpty(
        _ value: String,
        _ parent: String,
        _ key: String
    ) throws(EmulatorConfigurationError) {
        guard value.isEmpty else { return }
        throw EmulatorConfigurationError(
            field: "\(parent).\(key)",
            problem: "is empty",
            remedy: EmulatorConfigurationError.remedy(forKey: key)
        )
    }

    private static func checkPublicKey(_ pem: String, field: String) throws(EmulatorConfigurationError) {
        guard (try? P256.Signing.PublicKey(pemRepresentation: pem)) == nil else { return }
        // Never the key itself in the message: it may be the private one.
        throw EmulatorConfigurationError(
            field: field,
            problem: pem.contains("PRIVATE KEY") ? "holds a private key" : "is not a P-256 public key in PEM",
            remedy: EmulatorConfigurationError.publicKeyRemedy
        )
    }

    /// Apple registers only https redirect URIs and notification endpoints on a domain name.
    private func checkRegisteredURL(_ uri: String, field: String, path: String) throws(EmulatorConfigurationError) {
        let components = URLComponents(string: uri)
        let scheme = components?.scheme?.lowercased()
        let host = (components?.host ?? "").lowercased()
        guard scheme == "https" || scheme == "http", !host.isEmpty else {
            throw EmulatorConfigurationError(
                field: field,
                problem: "is \(uri), not an absolute URL",
                remedy: "an https URL on your domain, such as \"https://example.com/\(path)\""
            )
        }
        let local = scheme == "http" || Self.isLocalHost(host)
        guard local, !allowLocalRedirectURIs else { return }
        throw EmulatorConfigurationError(
            field: field,
            problem: "is \(uri), which Apple refuses (it registers https on a domain name: not http, localhost or "
                + "an IP address)",
            remedy:
                "an https URL on your domain, such as \"https://example.com/\(path)\"; or, for a server on this "
                + #"machine, set "allowLocalRedirectURIs": true (siwa emulator --allow-local-redirect-uris)"#
        )
    }

    /// `localhost` (and names under it) or an IP address, which Apple refuses as a redirect URI's host.
    static func isLocalHost(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        if host.contains(":") { return true }  // only an IPv6 address has colons in a URL's host
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }
}
