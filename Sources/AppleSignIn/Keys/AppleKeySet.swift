import CryptoExtras

/// Apple's JSON Web Key Set (`GET /auth/keys`), parsed into RSA keys by `kid`.
public struct AppleKeySet: Sendable {
    /// Keys by `kid`.
    public let keys: [String: AppleSigningKey]

    /// Makes a set from parsed keys.
    /// - Parameter keys: the keys; of two with the same `kid`, the later one is kept.
    public init(keys: [AppleSigningKey]) {
        var byID: [String: AppleSigningKey] = [:]
        for key in keys { byID[key.keyID] = key }
        self.keys = byID
    }

    /// Parses a JWKS document. Keys that are not RSA signing keys for RS256 are skipped, as is any key under 2048 bits;
    /// a document that is not a JWKS at all, or holds no usable key, fails.
    /// - Parameter jwks: the body of Apple's `/auth/keys`.
    /// - Throws: ``AppleSignInError/Code/unexpectedResponse``.
    public init(jwks: some Collection<UInt8>) throws(AppleSignInError) {
        let entries = try Self.entries(jwks, code: .unexpectedResponse, subject: "Apple's key set")
        let keys = entries.compactMap { try? Self.signingKey($0).get() }
        guard !keys.isEmpty else {
            throw AppleSignInError(.unexpectedResponse, "Apple's key set holds no RSA RS256 signing key")
        }
        self.init(keys: keys)
    }

    /// Parses a JWKS document an operator configured (a copy of Apple's key set), refusing any entry that is not a
    /// usable key instead of skipping it: a copy made by hand that lost a `kid` or a modulus should fail at start,
    /// not at the sign-in that needs that key.
    /// - Parameter jwks: the configured JWKS document.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` saying which key is wrong and why.
    public init(configuredJWKS jwks: some Collection<UInt8>) throws(AppleSignInError) {
        let entries = try Self.entries(jwks, code: .invalidConfiguration, subject: "the key set")
        guard !entries.isEmpty else {
            throw AppleSignInError(
                .invalidConfiguration,
                "the key set's 'keys' array is empty: copy Apple's /auth/keys"
            )
        }
        var keys: [AppleSigningKey] = []
        for (index, entry) in entries.enumerated() {
            switch Self.signingKey(entry) {
            case .success(let key):
                guard !keys.contains(where: { $0.keyID == key.keyID }) else {
                    throw AppleSignInError(
                        .invalidConfiguration,
                        "key \(index + 1): kid '\(key.keyID)' is listed twice"
                    )
                }
                keys.append(key)
            case .failure(let problem):
                throw AppleSignInError(.invalidConfiguration, "key \(index + 1): \(problem.reason)")
            }
        }
        self.init(keys: keys)
    }

    /// The `keys` array of a JWKS document.
    private static func entries(
        _ jwks: some Collection<UInt8>,
        code: AppleSignInError.Code,
        subject: String
    ) throws(AppleSignInError) -> [JSONValue] {
        let document: JSONValue
        do {
            document = try JSONReader.parseObject(jwks)
        } catch {
            throw AppleSignInError(code, "\(subject) is not JSON (\(error))")
        }
        guard case .array(let entries) = document["keys"] else {
            throw AppleSignInError(code, "\(subject) has no 'keys' array")
        }
        return entries
    }

    /// One entry as an RS256 signing key, or why it is not one.
    private static func signingKey(_ entry: JSONValue) -> Result<AppleSigningKey, AppleSignInError> {
        func not(_ reason: String) -> Result<AppleSigningKey, AppleSignInError> {
            .failure(AppleSignInError(.invalidConfiguration, reason))
        }
        guard entry["kty"]?.stringValue == "RSA" else { return not("not an RSA key (\"kty\": \"RSA\")") }
        guard let kid = entry["kid"]?.stringValue, !kid.isEmpty else { return not("has no \"kid\"") }
        guard entry["alg"].map({ $0.stringValue == "RS256" }) ?? true else { return not("kid '\(kid)' is not RS256") }
        guard entry["use"].map({ $0.stringValue == "sig" }) ?? true else {
            return not("kid '\(kid)' is not a signing key (\"use\": \"sig\")")
        }
        guard let n = entry["n"]?.stringValue.flatMap({ Base64URL.decode(String($0.filter { $0 != "=" })) }),
            let e = entry["e"]?.stringValue.flatMap({ Base64URL.decode(String($0.filter { $0 != "=" })) }),
            let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e)
        else { return not("kid '\(kid)' has no valid \"n\" and \"e\"") }
        guard publicKey.keySizeInBits >= 2048 else { return not("kid '\(kid)' is shorter than 2048 bits") }
        return .success(AppleSigningKey(keyID: kid, publicKey: publicKey))
    }
}
