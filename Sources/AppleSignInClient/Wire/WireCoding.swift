import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The JSON coding of siwa's wire format: camelCase keys, ISO 8601 dates (with or without fractional seconds).
enum WireCoding {
    static func encode(_ value: some Encodable) throws -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw SiwaClientError(.invalidResponse, "could not encode the request body", underlying: error)
        }
    }

    /// Decodes a successful answer.
    /// - Throws: `SiwaClientError` with code `.invalidResponse` when `data` is not a `T`.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, status: Int) throws -> T {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw SiwaClientError(
                .invalidResponse,
                "the server's answer is not the expected JSON",
                status: status,
                underlying: error
            )
        }
    }

    /// The error for an answer with an error status, carrying the server's `error` and `message` when present.
    static func serverError(_ data: Data, _ response: HTTPURLResponse) -> SiwaClientError {
        let answer = try? JSONDecoder().decode(ErrorAnswer.self, from: data)
        return SiwaClientError(
            .server,
            answer?.message ?? "the server answered HTTP \(response.statusCode)",
            status: response.statusCode,
            serverCode: answer?.error,
            serverMessage: answer?.message
        )
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date")
        }
        return decoder
    }
}
