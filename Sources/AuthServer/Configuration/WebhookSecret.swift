import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The secret of one webhook endpoint, written as the Standard Webhooks specification writes it: `whsec_` and the
/// base64 of 24 to 64 random bytes. It never prints its key.
struct WebhookSecret: Sendable, CustomStringConvertible {
    /// The smallest and largest key the specification allows, in bytes.
    static let keySizes = 24...64

    /// The HMAC key: only the signature reads it.
    let key: SymmetricKey

    /// Reads a secret as `whsec_BASE64`.
    /// - Parameter text: the secret as configured.
    /// - Throws: ``WebhookSecretError`` naming what is wrong with it (never the secret itself).
    init(_ text: String) throws(WebhookSecretError) {
        guard text.hasPrefix("whsec_") else { throw WebhookSecretError("it does not start with whsec_") }
        guard let bytes = Data(base64Encoded: String(text.dropFirst(6))) else {
            throw WebhookSecretError("what follows whsec_ is not base64")
        }
        guard Self.keySizes.contains(bytes.count) else {
            throw WebhookSecretError(
                "its key is \(bytes.count) bytes; it must be \(Self.keySizes.lowerBound) to \(Self.keySizes.upperBound)"
            )
        }
        key = SymmetricKey(data: bytes)
    }

    var description: String { "whsec_… (\(key.bitCount / 8) bytes)" }
}

/// A webhook secret that cannot be used, and why.
struct WebhookSecretError: Error, CustomStringConvertible {
    let reason: String

    init(_ reason: String) { self.reason = reason }

    var description: String { "the webhook secret cannot be used: \(reason)" }
}
