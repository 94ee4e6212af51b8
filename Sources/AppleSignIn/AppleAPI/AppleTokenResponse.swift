/// What Apple's token endpoint answers (`POST /auth/token`).
public struct AppleTokenResponse: Sendable, CustomStringConvertible {
    /// `access_token` (Apple's; siwa uses it only for revocation). - Warning: a credential.
    public var accessToken: String
    /// `token_type`, `bearer`.
    public var tokenType: String
    /// `expires_in`, seconds.
    public var expiresIn: Int
    /// `refresh_token`: only from the authorization-code grant; Apple's refresh tokens do not rotate.
    /// - Warning: a long-lived credential; store it encrypted.
    public var refreshToken: String?
    /// `id_token` as sent.
    public var idToken: String?
    /// `id_token`, verified like an identity token (when it was present).
    public var verifiedIDToken: IdentityToken?

    /// Makes a response from its parts (tests, and the emulator side of the code).
    /// - Parameters:
    ///   - accessToken: `access_token`.
    ///   - tokenType: `token_type`.
    ///   - expiresIn: `expires_in`, seconds.
    ///   - refreshToken: `refresh_token`, if any.
    ///   - idToken: `id_token` as sent, if any.
    ///   - verifiedIDToken: the verified `id_token`, if any.
    public init(
        accessToken: String,
        tokenType: String,
        expiresIn: Int,
        refreshToken: String?,
        idToken: String?,
        verifiedIDToken: IdentityToken? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.verifiedIDToken = verifiedIDToken
    }

    public var description: String {
        "AppleTokenResponse(tokenType: \(tokenType), expiresIn: \(expiresIn), refreshToken: "
            + "\(refreshToken == nil ? "none" : "redacted"), idToken: \(idToken == nil ? "none" : "redacted"))"
    }

    init(json body: [UInt8]) throws(AppleSignInError) {
        let document: JSONValue
        do {
            document = try JSONReader.parseObject(body)
        } catch {
            throw AppleSignInError(.unexpectedResponse, "Apple's token response is not a JSON object (\(error))")
        }
        guard let accessToken = document["access_token"]?.stringValue else {
            throw AppleSignInError(.unexpectedResponse, "Apple's token response has no access_token")
        }
        self.init(
            accessToken: accessToken,
            tokenType: document["token_type"]?.stringValue ?? "bearer",
            expiresIn: document["expires_in"]?.int64Value.flatMap { Int(exactly: $0) } ?? 3600,
            refreshToken: document["refresh_token"]?.stringValue,
            idToken: document["id_token"]?.stringValue
        )
    }
}

/// The outcome of validating an Apple refresh token.
public enum RefreshTokenValidation: Sendable {
    /// Apple accepted it: the user still uses Sign in with Apple with the app.
    case valid(AppleTokenResponse)
    /// Apple answered `invalid_grant`: the token was revoked (the user stopped using Sign in with Apple with the app,
    /// or it was revoked through `/auth/revoke`).
    case revoked
}

/// `token_type_hint` of a revocation.
public enum TokenTypeHint: String, Sendable {
    case refreshToken = "refresh_token"
    case accessToken = "access_token"
}
