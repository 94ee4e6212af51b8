#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one encoder of siwa's JSON answers: every `Encodable` answer (siwa's own, the OpenID provider's, the client
/// contracts' and their error envelopes) is written by it, with ISO 8601 dates, sorted keys (the same bytes for the
/// same answer) and `/` unescaped. The few answers on the hot routes are written byte by byte with `JSONWriter`
/// instead (the session answer, the error body, `/readyz`), to the same rules.
enum JSONAnswer {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// `value` as JSON.
    /// - Parameter value: the answer.
    /// - Returns: its UTF-8 bytes.
    /// - Throws: what encoding `value` throws (a value that cannot be JSON, such as an infinite number).
    static func bytes(_ value: some Encodable) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }
}
