import AppleSignIn
import Foundation

/// Decodes a `Decodable` request body from the ``JSONValue`` that the strict reader already made of it.
///
/// Every JSON body is first read by `JSONReader`, which refuses what `JSONDecoder` would let through (duplicate keys,
/// deep nesting, invalid UTF-8, trailing content). Handing the bytes to `JSONDecoder` afterwards parsed them a second
/// time, through Foundation's generic machinery: most of a sign-in body's 2–3% of a sign-in's CPU. This decoder reads
/// the one parse, and throws the same `DecodingError` cases as `JSONDecoder` for a missing key, a wrong type and a
/// null, so the errors a client sees are unchanged (`JSONValueDecoderTests` compares the two).
struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ value: JSONValue, codingPath: [any CodingKey] = []) {
        self.value = value
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw Self.mismatch([String: JSONValue].self, value, codingPath)
        }
        return KeyedDecodingContainer(Keyed<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Self.mismatch([JSONValue].self, value, codingPath) }
        return Unkeyed(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if case .null = value {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) but found null."))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type)."))
    }

    /// One value as `type`: the scalars straight from the tree, anything else through its own `init(from:)`.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, path: [any CodingKey]) throws -> T {
        switch type {
        case is String.Type:
            guard case .string(let string) = value else { throw mismatch(type, value, path) }
            return string as! T
        case is Bool.Type:
            guard case .bool(let bool) = value else { throw mismatch(type, value, path) }
            return bool as! T
        case is Double.Type:
            return try number(value, path) as! T
        case is Float.Type:
            let number = Float(try number(value, path))
            guard number.isFinite else { throw notRepresentable(value, as: Float.self, path) }
            return number as! T
        case is URL.Type:
            // As `JSONDecoder`: a URL is a string.
            guard let url = URL(string: try decode(String.self, from: value, path: path)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Invalid URL string."))
            }
            return url as! T
        case is Data.Type:
            // As `JSONDecoder`'s default: base64 text.
            guard let data = Data(base64Encoded: try decode(String.self, from: value, path: path)) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "Encountered Data is not valid Base64.")
                )
            }
            return data as! T
        case is Decimal.Type:
            // `JSONDecoder` reads a `Decimal` from the number's text; no request body has one. Refused here rather
            // than read another way, so that a body type that gains one fails its test first.
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "Decimal is not supported by JSONValueDecoder.")
            )
        case let integer as any FixedWidthInteger.Type:
            return try Self.integer(integer, value, path) as! T
        default:
            return try T(from: JSONValueDecoder(value, codingPath: path))
        }
    }

    private static func number(_ value: JSONValue, _ path: [any CodingKey]) throws -> Double {
        guard case .number(let text) = value, let number = Double(text) else {
            throw mismatch(Double.self, value, path)
        }
        // As `JSONDecoder`: a number too large for a `Double` (`1e400`) is refused, not read as infinity.
        guard number.isFinite else { throw notRepresentable(value, as: Double.self, path) }
        return number
    }

    /// A number that `type` cannot hold (`1e400` as a `Double`, `256` as a `UInt8`), as `JSONDecoder` refuses it.
    private static func notRepresentable(
        _ value: JSONValue,
        as type: Any.Type,
        _ path: [any CodingKey]
    ) -> DecodingError {
        let text = if case .number(let text) = value { String(text.prefix(40)) } else { "" }
        return .dataCorrupted(
            .init(codingPath: path, debugDescription: "Parsed JSON number <\(text)> does not fit in \(type).")
        )
    }

    private static func integer<I: FixedWidthInteger>(
        _ type: I.Type,
        _ value: JSONValue,
        _ path: [any CodingKey]
    ) throws -> I {
        guard case .number(let text) = value else { throw mismatch(type, value, path) }
        // As `JSONDecoder`: digits first, then a number with a fraction or exponent that is a whole number in range.
        if let integer = I(text) { return integer }
        if let double = Double(text), let integer = I(exactly: double) { return integer }
        throw notRepresentable(value, as: type, path)
    }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [JSONMember]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool { member(key) != nil }

        private func member(_ key: Key) -> JSONValue? {
            let name = key.stringValue
            return members.first { $0.hasKey(name) }?.value
        }

        private func required(_ key: Key) throws -> JSONValue {
            guard let value = member(key) else {
                throw DecodingError.keyNotFound(
                    key,
                    .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue).")
                )
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = try required(key) { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try JSONValueDecoder.decode(type, from: try required(key), path: codingPath + [key])
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type,
            forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try JSONValueDecoder(try required(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try JSONValueDecoder(try required(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            JSONValueDecoder(.object(members), codingPath: codingPath)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            JSONValueDecoder(member(key) ?? .null, codingPath: codingPath + [key])
        }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        init(elements: [JSONValue], codingPath: [any CodingKey]) {
            self.elements = elements
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        private var indexKey: any CodingKey { IndexKey(intValue: currentIndex) }

        private mutating func next(_ type: Any.Type) throws -> JSONValue {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type,
                    .init(codingPath: codingPath + [indexKey], debugDescription: "Unkeyed container is at end.")
                )
            }
            defer { currentIndex += 1 }
            return elements[currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, case .null = elements[currentIndex] else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let path = codingPath + [indexKey]
            return try JSONValueDecoder.decode(type, from: try next(type), path: path)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            let path = codingPath + [indexKey]
            return try JSONValueDecoder(try next(type), codingPath: path).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let path = codingPath + [indexKey]
            return try JSONValueDecoder(try next([JSONValue].self), codingPath: path).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let path = codingPath + [indexKey]
            return JSONValueDecoder(try next(JSONValue.self), codingPath: path)
        }
    }

    private struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }
}

extension JSONValueDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try Self.decode(type, from: value, path: codingPath)
    }
}
