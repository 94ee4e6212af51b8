import AppleSignIn
import Foundation
import HummingbirdCore

/// A request's path and query as logs may show it: the values of credential-bearing query parameters (`code`,
/// `id_token_hint`, `client_secret`, `code_verifier` and any whose name holds `token`, `secret` or `password`) are
/// replaced by `***`. Every log line that carries a URL takes it from here, so none can carry a credential.
enum LoggedURI {
    /// `uri`'s path and query with credentials redacted.
    static func redacting(_ uri: URI) -> String {
        guard let query = uri.query, !query.isEmpty else { return uri.path }
        var redacted = uri.path + "?"
        var first = true
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            if !first { redacted += "&" }
            first = false
            guard let equals = pair.firstIndex(of: "=") else {
                redacted += pair
                continue
            }
            let name = pair[..<equals]
            redacted += name
            redacted += isCredential(name) ? "=***" : pair[equals...]
        }
        return redacted
    }

    /// Whether a query parameter of this (percent-encoded) name carries a credential. Names are compared after
    /// decoding and lower-casing, so that `ID%5FTOKEN%5FHINT` is caught too.
    static func isCredential(_ encodedName: Substring) -> Bool {
        let name = (FormURLEncoding.decodeComponent(encodedName) ?? String(encodedName)).lowercased()
        if exactNames.contains(name) { return true }
        return fragments.contains { name.contains($0) }
    }

    private static let exactNames: Set<String> = ["code", "code_verifier", "assertion", "client_assertion"]
    private static let fragments = ["token", "secret", "password"]
}
