import AppleSignIn
import Foundation
import Hummingbird
import NIOCore

/// A compatibility request's fields, from a JSON object or a form body, with case-insensitive names (ServiceStack
/// binds `AccessToken`, `accessToken` and `access_token` alike).
struct CompatRequestBody: Sendable {
    /// Lower-cased names without `_`, to values (strings, numbers and booleans as strings; objects kept as objects).
    private let fields: [String: Field]

    enum Field: Sendable {
        case text(String)
        case object(CompatRequestBody)
    }

    init(fields: [String: Field]) {
        self.fields = fields
    }

    /// Reads the body (413 beyond `limit`) and parses it.
    static func read(_ request: Request, limit: Int) async throws -> CompatRequestBody {
        try parse(try await collect(request, limit: limit), contentType: request.headers[.contentType])
    }

    /// The raw body, refusing more than `limit` bytes with 413.
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        do {
            return Array(try await request.body.collect(upTo: limit).readableBytesView)
        } catch {
            throw tooLarge(limit)
        }
    }

    /// 413 `body_too_large` for a body of more than `limit` bytes.
    static func tooLarge(_ limit: Int) -> AuthServerError {
        AuthServerError(
            .contentTooLarge,
            AuthServerError.Code.bodyTooLarge,
            "the request body is larger than \(limit) bytes"
        )
    }

    /// JSON when the body starts with `{`, else a form. An empty body has no fields.
    static func parse(_ bytes: [UInt8], contentType: String?) throws -> CompatRequestBody {
        guard let first = bytes.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) else {
            return CompatRequestBody(fields: [:])
        }
        if first == UInt8(ascii: "{") {
            // One strict reading (no duplicated key), as on siwa's own routes.
            do {
                _ = try JSONReader.parseObject(bytes)
            } catch {
                throw AuthServerError.badRequest(
                    AuthServerError.Code.invalidJSON,
                    "the body is not a single JSON object: \(error.reason)"
                )
            }
            guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                throw AuthServerError.badRequest(AuthServerError.Code.invalidJSON, "the body is not a JSON object")
            }
            if let name = normalizedDuplicate(in: object) { throw duplicate(name) }
            return CompatRequestBody(json: object)
        }
        guard isForm(contentType) else {
            throw AuthServerError.badRequest(AuthServerError.Code.invalidBody, "send a JSON object or a form")
        }
        var fields: [String: Field] = [:]
        for (name, value) in formFields(bytes) {
            // Names bind case-insensitively: `AccessToken` and `access_token` twice would be two readings of one field.
            guard fields.updateValue(.text(value), forKey: Self.normalize(name)) == nil else { throw duplicate(name) }
        }
        return CompatRequestBody(fields: fields)
    }

    private static func duplicate(_ name: String) -> AuthServerError {
        AuthServerError.badRequest(
            AuthServerError.Code.duplicateField,
            "field \(LoggedText.quoted(name, limit: 64)) is sent more than once (names match case-insensitively)"
        )
    }

    /// A name that two keys of `object` (or of an object inside it) share once normalised.
    private static func normalizedDuplicate(in object: [String: Any]) -> String? {
        var seen: Set<String> = []
        for (name, value) in object {
            guard seen.insert(normalize(name)).inserted else { return name }
            if let nested = value as? [String: Any], let inner = normalizedDuplicate(in: nested) { return inner }
        }
        return nil
    }

    static func isForm(_ contentType: String?) -> Bool {
        (contentType ?? "").lowercased().hasPrefix("application/x-www-form-urlencoded")
    }

    /// A form body's fields, in order.
    static func formFields(_ bytes: [UInt8]) -> [(String, String)] {
        FormURLEncoding.lenientPairs(bytes).map { ($0.name, $0.value) }
    }

    init(json object: [String: Any]) {
        var fields: [String: Field] = [:]
        for (name, value) in object {
            switch value {
            case let text as String: fields[Self.normalize(name)] = .text(text)
            case let nested as [String: Any]: fields[Self.normalize(name)] = .object(CompatRequestBody(json: nested))
            case let flag as Bool: fields[Self.normalize(name)] = .text(flag ? "true" : "false")
            case let number as Int: fields[Self.normalize(name)] = .text(String(number))
            case let number as Double: fields[Self.normalize(name)] = .text(String(number))
            default: break  // null and arrays carry nothing a contract reads
            }
        }
        self.fields = fields
    }

    /// A non-empty text field.
    func string(_ name: String) -> String? {
        guard case .text(let value) = fields[Self.normalize(name)], !value.isEmpty else { return nil }
        return value
    }

    func object(_ name: String) -> CompatRequestBody? {
        guard case .object(let value) = fields[Self.normalize(name)] else { return nil }
        return value
    }

    func bool(_ name: String) -> Bool {
        guard let value = string(name)?.lowercased() else { return false }
        return value == "true" || value == "1"
    }

    /// A field that may be sent as a text field or as JSON text (ServiceStack's `meta` from a form).
    func objectOrJSONText(_ name: String) -> CompatRequestBody? {
        if let object = object(name) { return object }
        guard let text = string(name), let data = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return CompatRequestBody(json: object)
    }

    private static func normalize(_ name: String) -> String {
        name.lowercased().filter { $0 != "_" && $0 != "-" }
    }

}
