import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads the body (refusing more than `limit` bytes with 413) and decodes JSON, naming the field that is wrong.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch {
            throw AuthServerError(.contentTooLarge, "body_too_large", "the request body is larger than \(limit) bytes")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let DecodingError.keyNotFound(key, context) {
            throw AuthServerError.badRequest(
                "missing_field",
                "field '\(Self.path(context.codingPath + [key]))' is required"
            )
        } catch let DecodingError.typeMismatch(_, context) {
            throw AuthServerError.badRequest(
                "invalid_field",
                "field '\(Self.path(context.codingPath))' has the wrong type"
            )
        } catch let DecodingError.valueNotFound(_, context) {
            throw AuthServerError.badRequest(
                "invalid_field",
                "field '\(Self.path(context.codingPath))' must not be null"
            )
        } catch {
            throw AuthServerError.badRequest("invalid_json", "the body is not a JSON object")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The bearer token of the `Authorization` header.
    var bearerToken: String? {
        guard let value = headers[.authorization] else { return nil }
        let prefix = "bearer "
        guard value.count > prefix.count, value.prefix(prefix.count).lowercased() == prefix else { return nil }
        return String(value.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
    }
}
