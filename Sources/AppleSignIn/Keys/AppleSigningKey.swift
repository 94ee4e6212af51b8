public import CryptoExtras

/// One of Apple's identity-token signing keys (RSA, RS256), parsed once when the key set is fetched.
public struct AppleSigningKey: Sendable {
    /// The key id tokens name in their `kid` header.
    public let keyID: String
    /// The parsed RSA public key.
    public let publicKey: _RSA.Signing.PublicKey

    /// Pairs a key with its id.
    /// - Parameters:
    ///   - keyID: the `kid`.
    ///   - publicKey: the RSA public key.
    public init(keyID: String, publicKey: _RSA.Signing.PublicKey) {
        self.keyID = keyID
        self.publicKey = publicKey
    }
}
