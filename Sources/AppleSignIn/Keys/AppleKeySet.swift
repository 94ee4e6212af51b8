import CryptoExtras

/// Apple's JSON Web Key Set (`GET /auth/keys`), parsed into RSA keys by `kid`.
public struct AppleKeySet: Sendable {
    /// Keys by `kid`.
    public let keys: [String: AppleSigningKey]

    public init(keys: [AppleSigningKey]) {
        var byID: [String: AppleSigningKey] = [:]
        for key in keys { byID[key.keyID] = key }
        self.keys = byID
    }

    /// Parses a JWKS document. Keys that are not RSA signing keys for RS256 are skipped, as is any key under 2048 bits;
    /// a document that is not a JWKS at all, or holds no usable key, fails.
    /// - Throws: ``AppleSignInError/Code/unexpectedResponse``.
    public init(jwks: some Collection<UInt8>) throws(AppleSignInError) {
        let document: JSONValue
        do {
            document = try JSONReader.parseObject(jwks)
        } catch {
            throw AppleSignInError(.unexpectedResponse, "Apple's key set is not JSON (\(error))")
        }
        guard case .array(let entries) = document["keys"] else {
            throw AppleSignInError(.unexpectedResponse, "Apple's key set has no 'keys' array")
        }
        var keys: [AppleSigningKey] = []
        for entry in entries {
            guard entry["kty"]?.stringValue == "RSA",
                let kid = entry["kid"]?.stringValue, !kid.isEmpty,
                entry["alg"].map({ $0.stringValue == "RS256" }) ?? true,
                entry["use"].map({ $0.stringValue == "sig" }) ?? true,
                let n = entry["n"]?.stringValue.flatMap({ Base64URL.decode(String($0.filter { $0 != "=" })) }),
                let e = entry["e"]?.stringValue.flatMap({ Base64URL.decode(String($0.filter { $0 != "=" })) }),
                let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e),
                publicKey.keySizeInBits >= 2048
            else { continue }
            keys.append(AppleSigningKey(keyID: kid, publicKey: publicKey))
        }
        guard !keys.isEmpty else {
            throw AppleSignInError(.unexpectedResponse, "Apple's key set holds no RSA RS256 signing key")
        }
        self.init(keys: keys)
    }
}
