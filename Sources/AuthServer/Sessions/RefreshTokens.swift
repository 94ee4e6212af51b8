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
}
