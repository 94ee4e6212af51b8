import AppleSignIn
import Crypto

/// siwa's refresh tokens: 256 random bits, kept by the store only as SHA-256.
enum RefreshTokens {
    static func generate() -> String {
        WebAuthorization.randomToken(byteCount: 32)
    }

    static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// The random part of the token that replaces `presented` at rotation: an HMAC of it under a key derived from the
    /// data key (``successorKey(dataKey:)``), as long as a random one. Derived rather than drawn so that a client
    /// retrying within the reuse grace window (its answer was lost) gets the very token it missed, and the session
    /// keeps one chain of tokens; without the key nobody can compute it.
    static func successor(of presented: String, key: SymmetricKey) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Array(presented.utf8), using: key)))
    }

    /// The key of ``successor(of:key:)``: every instance that shares the data key derives the same one.
    static func successorKey(dataKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: dataKey,
            info: Array("siwa refresh token successor v1".utf8),
            outputByteCount: 32
        )
    }
}
