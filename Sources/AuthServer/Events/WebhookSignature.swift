import Crypto
import HTTPTypes

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

    fileprivate let key: SymmetricKey

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

/// The headers that sign one webhook delivery, per the Standard Webhooks specification: `webhook-id` (the event's
/// id, the same on every attempt, so that a receiver can drop a repeat), `webhook-timestamp` (the attempt's time, in
/// seconds) and `webhook-signature`, `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body` under each secret,
/// separated by spaces: during a rotation the old and the new secret both sign, and a receiver that knows either
/// accepts the delivery.
enum WebhookSignature {
    /// The signed headers of one attempt.
    /// - Parameters:
    ///   - id: the event's id.
    ///   - timestamp: when the attempt is made (whole seconds are signed).
    ///   - body: the exact bytes sent.
    ///   - secrets: the endpoint's secrets, at least one.
    /// - Returns: `webhook-id`, `webhook-timestamp` and `webhook-signature`.
    static func headers(id: String, timestamp: Date, body: [UInt8], secrets: [WebhookSecret]) -> HTTPFields {
        let seconds = String(Int64(timestamp.timeIntervalSince1970.rounded(.down)))
        var fields = HTTPFields()
        fields[.webhookID] = id
        fields[.webhookTimestamp] = seconds
        fields[.webhookSignature] = secrets.map { signature(id: id, seconds: seconds, body: body, secret: $0) }
            .joined(separator: " ")
        return fields
    }

    /// `v1,` and the base64 of HMAC-SHA256 over `id.seconds.body` under `secret`.
    static func signature(id: String, seconds: String, body: [UInt8], secret: WebhookSecret) -> String {
        var hmac = HMAC<SHA256>(key: secret.key)
        hmac.update(data: Array("\(id).\(seconds).".utf8))
        hmac.update(data: body)
        return "v1," + Data(hmac.finalize()).base64EncodedString()
    }
}

extension HTTPField.Name {
    /// Standard Webhooks' `webhook-id`.
    static let webhookID = HTTPField.Name("webhook-id")!
    /// Standard Webhooks' `webhook-timestamp`.
    static let webhookTimestamp = HTTPField.Name("webhook-timestamp")!
    /// Standard Webhooks' `webhook-signature`.
    static let webhookSignature = HTTPField.Name("webhook-signature")!
}
