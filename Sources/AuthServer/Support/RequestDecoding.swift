import AppleSignIn
import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads the body, refusing more than `limit` bytes with 413 `body_too_large`.
    mutating func collectBody(limit: Int) async throws -> ByteBuffer {
        do {
            return try await collectBody(upTo: limit)
        } catch {
            throw AuthServerError(
                .contentTooLarge,
                AuthServerError.Code.bodyTooLarge,
                "the request body is larger than \(limit) bytes"
            )
        }
    }

    /// Reads the body (refusing more than `limit` bytes with 413) and decodes JSON, naming the field that is wrong.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        var request = self
        return try request.decodeJSON(T.self, from: try await request.collectBody(limit: limit))
    }

    /// Decodes a JSON body already read.
    ///
    /// The body must be declared `application/json` (or a `+json` type): anything else is 415, so that a form or
    /// `text/plain` post, which a cross-site page can send without a CORS preflight, is never read as JSON. It must be
    /// one strict JSON document (``JSONReader``): a duplicated key is 400, since two parsers could each pick another
    /// of its values.
    ///
    /// - Parameters:
    ///   - type: What to decode.
    ///   - buffer: The body.
    ///   - members: The members the body may have, or `nil` to ignore members `type` does not read. Where a misspelt
    ///     member would silently widen what a request does (the admin API), the route names its members and any
    ///     other is refused.
    /// - Throws: ``AuthServerError`` 415 `unsupported_media_type`, 400 `invalid_json`, `missing_field`,
    ///   `invalid_field` or `unknown_field`.
    func decodeJSON<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer, members: Set<String>? = nil) throws -> T {
        guard Self.isJSON(headers[.contentType]) else {
            throw AuthServerError(
                .unsupportedMediaType,
                AuthServerError.Code.unsupportedMediaType,
                "send the body as 'Content-Type: application/json'"
            )
        }
        let value: JSONValue
        do {
            value = try buffer.withUnsafeReadableBytes { bytes throws(JSONReader.Failure) in
                try JSONReader.parseObject(bytes: bytes)
            }
        } catch {
            throw AuthServerError.badRequest(
                AuthServerError.Code.invalidJSON,
                "the body is not a single JSON object: \(error.reason)"
            )
        }
        if let members, case .object(let given) = value,
            let unknown = given.first(where: { !members.contains($0.key) })
        {
            let known = members.isEmpty ? "it takes none" : "it takes " + members.sorted().joined(separator: ", ")
            throw AuthServerError.badRequest(
                AuthServerError.Code.unknownField,
                "field \(LoggedText.quoted(unknown.key, limit: 64)) is not a member of this body; \(known)"
            )
        }
        do {
            return try T(from: JSONValueDecoder(value))
        } catch let DecodingError.keyNotFound(key, context) {
            throw AuthServerError.badRequest(
                AuthServerError.Code.missingField,
                "field '\(Self.path(context.codingPath + [key]))' is required"
            )
        } catch let DecodingError.typeMismatch(_, context) {
            throw AuthServerError.badRequest(
                AuthServerError.Code.invalidField,
                "field '\(Self.path(context.codingPath))' has the wrong type"
            )
        } catch let DecodingError.valueNotFound(_, context) {
            throw AuthServerError.badRequest(
                AuthServerError.Code.invalidField,
                "field '\(Self.path(context.codingPath))' must not be null"
            )
        } catch {
            throw AuthServerError.badRequest(AuthServerError.Code.invalidJSON, "the body is not a JSON object")
        }
    }

    /// `application/json`, or a `+json` media type, with any parameters.
    static func isJSON(_ contentType: String?) -> Bool {
        // Byte-level, as `bearerToken` below: Foundation's `trimmingCharacters` with `lowercased()` cost 1–2% of a
        // sign-in's CPU.
        guard var contentType else { return false }
        return contentType.withUTF8 { bytes in
            let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            let mediaType = trimmingBlanks(UnsafeBufferPointer(rebasing: bytes[..<end]))
            return asciiLowercaseEquals(mediaType, "application/json")
                || (mediaType.count >= "application/".utf8.count + "+json".utf8.count
                    && asciiLowercaseEquals(UnsafeBufferPointer(rebasing: mediaType.prefix(12)), "application/")
                    && asciiLowercaseEquals(UnsafeBufferPointer(rebasing: mediaType.suffix(5)), "+json"))
        }
    }

    /// Whether `bytes`, with ASCII letters lower-cased, are `lowercase`'s bytes.
    private static func asciiLowercaseEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte |= 0x20 }
            if byte != expected[index] { return false }
        }
        return true
    }

    /// `bytes` without the spaces and tabs (HTTP's optional white space) at either end.
    private static func trimmingBlanks(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = 0
        var end = bytes.count
        while start < end, isBlank(bytes[start]) { start += 1 }
        while end > start, isBlank(bytes[end - 1]) { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[start..<end])
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The bearer token of the `Authorization` header (scheme case-insensitive, surrounding blanks ignored).
    ///
    /// Byte-level on purpose: Foundation's `trimmingCharacters` walked the token's UTF-16 view and was a third of the
    /// CPU time of `GET /api/me` under load.
    var bearerToken: String? {
        guard var value = headers[.authorization] else { return nil }
        return value.withUTF8 { bytes -> String? in
            let scheme: StaticString = "bearer "
            let schemeLength = scheme.utf8CodeUnitCount
            guard bytes.count > schemeLength,
                Self.asciiLowercaseEquals(UnsafeBufferPointer(rebasing: bytes.prefix(schemeLength)), scheme)
            else { return nil }
            let token = Self.trimmingBlanks(UnsafeBufferPointer(rebasing: bytes[schemeLength...]))
            return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
        }
    }
}
