/// A strict RFC 8259 JSON reader for small documents.
///
/// It refuses duplicate object keys, invalid UTF-8, unpaired surrogates, leading zeros, trailing content and nesting
/// deeper than ``maximumDepth``, so a document means one thing to siwa and cannot smuggle a second value for a claim.
package struct JSONReader {
    /// Errors carry the byte offset only: never document content, which may be a token.
    package struct Failure: Error, CustomStringConvertible {
        package let reason: String
        package let offset: Int
        package var description: String { "\(reason) at byte \(offset)" }
    }

    package static let maximumDepth = 32

    /// Parses one JSON document.
    package static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(Failure) -> JSONValue in try parse(buffer: buffer) }
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(Failure) in try parse(buffer: buffer) }
    }

    /// Parses bytes where they are. For callers in other modules, where the generic ``parse(_:)`` runs unspecialised:
    /// it copied a request body into an array byte by byte, through witness tables.
    package static func parseObject(bytes: UnsafeRawBufferPointer) throws(Failure) -> JSONValue {
        let value = try parse(buffer: bytes.assumingMemoryBound(to: UInt8.self))
        guard case .object = value else { throw Failure(reason: "expected an object", offset: 0) }
        return value
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var reader = JSONReader(buffer: buffer)
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == buffer.count else { throw reader.failure("trailing content") }
        return value
    }

    /// Parses a JSON document that must be an object.
    package static func parseObject(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        let value = try parse(bytes)
        guard case .object = value else { throw Failure(reason: "expected an object", offset: 0) }
        return value
    }

    private let buffer: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(buffer: UnsafeBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    private func failure(_ reason: String) -> Failure {
        Failure(reason: reason, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < buffer.count {
            switch buffer[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private mutating func readValue(depth: Int) throws(Failure) -> JSONValue {
        guard index < buffer.count else { throw failure("unexpected end") }
        switch buffer[index] {
        case UInt8(ascii: "{"): return try readObject(depth: depth + 1)
        case UInt8(ascii: "["): return try readArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"):
            try readLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try readLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try readLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try readNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func readLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard buffer.count - index >= count else { throw failure("unexpected end") }
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where buffer[index + offset] != bytes[offset] {
            throw failure("invalid literal")
        }
        index += count
    }

    private mutating func readObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("nesting too deep") }
        index += 1  // {
        var members: [JSONMember] = []
        members.reserveCapacity(16)  // JWT headers and claims: one allocation instead of five
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let keyOffset = index
            let key = try readString()
            if members.contains(where: { $0.hasKey(key) }) {
                throw Failure(reason: "duplicate key", offset: keyOffset)
            }
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            members.append(JSONMember(key: key, value: try readValue(depth: depth)))
            skipWhitespace()
            guard index < buffer.count else { throw failure("unexpected end") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func readArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("nesting too deep") }
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue(depth: depth))
            skipWhitespace()
            guard index < buffer.count else { throw failure("unexpected end") }
            switch buffer[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw failure("expected ',' or ']'")
            }
        }
    }

    private mutating func readNumber() throws(Failure) -> String {
        let start = index
        if buffer[index] == UInt8(ascii: "-") { index += 1 }
        guard index < buffer.count else { throw failure("invalid number") }
        if buffer[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(buffer[index]) {
            while index < buffer.count, isDigit(buffer[index]) { index += 1 }
        } else {
            throw failure("invalid number")
        }
        if index < buffer.count, buffer[index] == UInt8(ascii: ".") {
            index += 1
            guard index < buffer.count, isDigit(buffer[index]) else { throw failure("invalid number") }
            while index < buffer.count, isDigit(buffer[index]) { index += 1 }
        }
        if index < buffer.count, buffer[index] == UInt8(ascii: "e") || buffer[index] == UInt8(ascii: "E") {
            index += 1
            if index < buffer.count, buffer[index] == UInt8(ascii: "+") || buffer[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < buffer.count, isDigit(buffer[index]) else { throw failure("invalid number") }
            while index < buffer.count, isDigit(buffer[index]) { index += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func readString() throws(Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes. Pure ASCII (nearly every claim) needs no UTF-8 validation.
        var nonASCII: UInt8 = 0
        while index < buffer.count {
            let byte = buffer[index]
            nonASCII |= byte & 0x80
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: buffer[start..<index])
                let string: String
                if nonASCII == 0 {
                    string = String(decoding: slice, as: UTF8.self)
                } else {
                    guard let validated = String(validating: slice, as: UTF8.self) else {
                        throw failure("invalid UTF-8")
                    }
                    string = validated
                }
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("control character in string") }
            index += 1
        }
        // Slow path: unescape into a scratch buffer.
        var scratch = Array(UnsafeBufferPointer(rebasing: buffer[start..<index]))
        while index < buffer.count {
            let byte = buffer[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: scratch, as: UTF8.self) else { throw failure("invalid UTF-8") }
                index += 1
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < buffer.count else { throw failure("unexpected end") }
                let escaped = buffer[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(escaped)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &scratch)
                default: throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("control character in string") }
                scratch.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    private mutating func readHex4() throws(Failure) -> UInt32 {
        guard buffer.count - index >= 4 else { throw failure("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = buffer[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func appendUnicodeEscape(to scratch: inout [UInt8]) throws(Failure) {
        var scalarValue = try readHex4()
        if (0xD800...0xDBFF).contains(scalarValue) {
            guard buffer.count - index >= 2, buffer[index] == UInt8(ascii: "\\"), buffer[index + 1] == UInt8(ascii: "u")
            else { throw failure("unpaired surrogate") }
            index += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate") }
            scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalarValue) {
            throw failure("unpaired surrogate")
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("invalid \\u escape") }
        scratch.append(contentsOf: Array(String(Character(scalar)).utf8))
    }
}
