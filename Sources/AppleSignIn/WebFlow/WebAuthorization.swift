/// Helpers for the web (and Android web-view) flow: the authorize URL and random `state`/`nonce` values.
public enum WebAuthorization {
    /// Scopes Apple understands.
    public enum Scope: String, Sendable {
        case name
        case email
    }

    /// Builds Apple's authorize URL for the web flow.
    ///
    /// `response_type=code id_token` and `response_mode=form_post` (Apple requires `form_post` whenever a scope is
    /// requested), scopes space-separated and encoded as `%20`, every value percent-encoded.
    /// - Parameters:
    ///   - baseURL: Apple (or the emulator).
    ///   - clientID: the Services ID.
    ///   - redirectURI: the https callback registered for the Services ID.
    ///   - state: a fresh random value, kept server-side and checked on the callback.
    ///   - nonce: a fresh random value (or its SHA-256 hex), checked in the `id_token`.
    ///   - scopes: default name and email.
    /// - Returns: the absolute URL of `/auth/authorize` with its query, to send the browser to.
    public static func authorizeURL(
        baseURL: AppleBaseURL,
        clientID: ClientID,
        redirectURI: String,
        state: String,
        nonce: String?,
        scopes: [Scope] = [.name, .email]
    ) -> String {
        var query: [(String, String)] = [
            ("client_id", clientID.rawValue),
            ("redirect_uri", redirectURI),
            ("response_type", "code id_token"),
        ]
        if !scopes.isEmpty {
            query.append(("scope", scopes.map(\.rawValue).joined(separator: " ")))
            query.append(("response_mode", "form_post"))
        } else {
            query.append(("response_mode", "form_post"))
        }
        query.append(("state", state))
        if let nonce { query.append(("nonce", nonce)) }
        return baseURL.url("/auth/authorize") + "?" + FormURLEncoding.encode(query)
    }

    /// A random value for `state` or `nonce`: 256 bits from the system's CSPRNG, base64url.
    /// - Parameter byteCount: how many random bytes (32 by default: 256 bits).
    /// - Returns: the bytes as unpadded base64url (43 characters for 32 bytes).
    public static func randomToken(byteCount: Int = 32) -> String {
        Base64URL.encode(SystemRandom.bytes(byteCount))
    }
}
