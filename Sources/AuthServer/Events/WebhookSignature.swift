import Crypto
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
