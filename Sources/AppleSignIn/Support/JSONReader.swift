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
        try object(try parse(buffer: bytes.assumingMemoryBound(to: UInt8.self)))
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
        try object(try parse(bytes))
    }

    /// `value` if it is an object; what both object entries refuse otherwise.
    private static func object(_ value: JSONValue) throws(Failure) -> JSONValue {
        guard case .object = value else { throw Failure(reason: "expected an object", offset: 0) }
        return value
    }

    private let buffer: UnsafeBufferPointer<UInt8>
    private var index = 0

    fileprivate init(buffer: UnsafeBufferPointer<UInt8>) {
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

    fileprivate mutating func readValue(depth: Int) throws(Failure) -> JSONValue {
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
            try readColon()
            members.append(JSONMember(key: key, value: try readValue(depth: depth)))
            if try readMemberEnd() { return .object(members) }
        }
    }

    /// Reads the `:` between a member's key and its value, and the white space around it.
    private mutating func readColon() throws(Failure) {
        skipWhitespace()
        guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
        index += 1
        skipWhitespace()
    }

    /// Reads what follows a member's value: true at the object's `}`, false at a `,` before another member.
    private mutating func readMemberEnd() throws(Failure) -> Bool {
        skipWhitespace()
        guard index < buffer.count else { throw failure("unexpected end") }
        switch buffer[index] {
        case UInt8(ascii: ","):
            index += 1
            return false
        case UInt8(ascii: "}"):
            index += 1
            return true
        default: throw failure("expected ',' or '}'")
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
        try scanNumber()
        return String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
    }

    /// Reads past a number, checking its grammar.
    private mutating func scanNumber() throws(Failure) {
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

    /// Reads past a string whose bytes are plain ASCII without escapes, returning where its text ends; nil (and
    /// the index unmoved) for any other string, which ``readString()`` then reads with its every check.
    fileprivate mutating func scanPlainString() -> Int? {
        var end = index + 1
        // Eight bytes at a time up to the first word holding a byte that ends or spoils a plain string (a quote, a
        // backslash, a control character, a byte of 0x80 or more); the bytes from that word on one by one.
        if let base = buffer.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs = ones &* 0x80
            while end + 8 <= buffer.count {
                let word = UnsafeRawPointer(base + end).loadUnaligned(as: UInt64.self)
                let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                // A byte's high bit is set in each term where the byte is zero (the quote and backslash terms) or
                // below 0x20 (the control term; exact for bytes below 0x80), and in `word` itself for 0x80 and up.
                let special =
                    ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                    | ((word &- ones &* 0x20) & ~word) | word
                if special & highs != 0 { break }
                end += 8
            }
        }
        while end < buffer.count {
            let byte = buffer[end]
            if byte == UInt8(ascii: "\"") {
                index = end + 1
                return end
            }
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\\") { return nil }
            end += 1
        }
        return nil
    }

    /// Reads past one value, checking it as ``readValue(depth:)`` does; strings and numbers (nearly every claim)
    /// without making them.
    private mutating func skipValue(depth: Int) throws(Failure) {
        guard index < buffer.count else { throw failure("unexpected end") }
        switch buffer[index] {
        case UInt8(ascii: "\""):
            if scanPlainString() == nil { _ = try readString() }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try scanNumber()
        default: _ = try readValue(depth: depth)
        }
    }

    /// Reads the members of the object at the index as ``readObject(depth:)`` does (the same failures at the same
    /// offsets), recording where each key and value is instead of making them.
    fileprivate mutating func readObjectMembers(
        texts: inout [String]
    ) throws(Failure) -> [JSONObjectView.Member] {
        index += 1  // {
        var members: [JSONObjectView.Member] = []
        members.reserveCapacity(16)
        skipWhitespace()
        if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        // One bit per plain key read so far, picked by its first bytes and length: a plain key whose bit is clear
        // is no earlier plain key, and needs no comparison with each of them (a claims object has a dozen keys).
        // A key that is not plain may equal any key as a string, so while there is one, every key is compared.
        var plainKeyBits: UInt64 = 0
        var sawKeyNotPlain = false
        while true {
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let keyOffset = index
            var key = JSONObjectView.Member(keyStart: keyOffset + 1, keyEnd: 0, keyPrefix: 0, text: -1, value: 0..<0)
            var bit: UInt64 = 0
            if let end = scanPlainString() {
                key.keyEnd = end
                key.keyPrefix = JSONObjectView.prefix(UnsafeBufferPointer(rebasing: buffer[key.keyStart..<end]))
                // (In Swift `>>` binds tighter than `&*`: the product is parenthesised. `&<<` masks its shift,
                // so the bit is never zero, which would let every key through unchecked.)
                bit = 1 &<< (((key.keyPrefix &+ UInt64(end - key.keyStart)) &* 0x9E37_79B9_7F4A_7C15) >> 58)
            } else {
                key.text = texts.count
                texts.append(try readString())
                sawKeyNotPlain = true
            }
            if !sawKeyNotPlain && bit != 0 && plainKeyBits & bit == 0 {
                plainKeyBits |= bit
            } else if members.contains(where: { JSONObjectView.sameKey($0, key, buffer, texts) }) {
                throw Failure(reason: "duplicate key", offset: keyOffset)
            }
            try readColon()
            let valueStart = index
            try skipValue(depth: 1)
            key.value = valueStart..<index
            members.append(key)
            if try readMemberEnd() { return members }
        }
    }

    /// Reads `bytes[range]` (all of `bytes` by default) as one JSON object, by the rules of ``parseObject(_:)``,
    /// into a view of its members; failures' offsets count from the range's start.
    package static func parseObjectView(
        _ bytes: [UInt8],
        range: Range<Int>? = nil
    ) throws(Failure) -> JSONObjectView {
        let range = range ?? bytes.indices
        var texts: [String] = []
        let members = try bytes.withUnsafeBufferPointer { whole throws(Failure) -> [JSONObjectView.Member]? in
            let buffer = UnsafeBufferPointer(rebasing: whole[range])
            var reader = JSONReader(buffer: buffer)
            reader.skipWhitespace()
            guard reader.index < buffer.count, buffer[reader.index] == UInt8(ascii: "{") else {
                // Not an object: the tree reader says what is wrong, exactly as for any other document (it throws,
                // at the latest with "expected an object"; the line after it is for the compiler).
                _ = try object(try parse(buffer: buffer))
                throw Failure(reason: "expected an object", offset: 0)
            }
            let members = try reader.readObjectMembers(texts: &texts)
            reader.skipWhitespace()
            guard reader.index == buffer.count else { throw reader.failure("trailing content") }
            return members
        }
        return JSONObjectView(bytes: bytes, range: range, members: members ?? [], texts: texts)
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

/// A JSON object read by the rules of ``JSONReader/parseObject(_:)`` (the same documents refused, with the same
/// failures), whose members' values are made only when looked up.
///
/// For a token's claims: reading them into a ``JSONValue`` tree made a string for every key and value and an array
/// of members, which the checks then searched by name and the verification then freed, about a tenth of an identity
/// token's verification (against 72% for the RSA check itself). Here a lookup compares the name with the key's
/// bytes in the payload and makes only the value asked for.
package struct JSONObjectView: Sendable {
    /// Where a member is, in plain integers (a lookup walks them without reference counting).
    struct Member: Sendable {
        /// A key in ASCII without escapes is the object's bytes `keyStart..<keyEnd`.
        var keyStart: Int
        var keyEnd: Int
        /// A plain key's first eight bytes (zero-filled when shorter, and keys cannot contain a zero byte): a lookup
        /// compares the name's with these and the length, and a longer key's other bytes only when both match.
        var keyPrefix: UInt64
        /// Any other key is `texts[text]`, as the reader decoded it; -1 for a plain key.
        var text: Int
        var value: Range<Int>
    }

    /// The buffer the object is in: for a token, its header and claims decoded side by side.
    package let bytes: [UInt8]
    /// Where the object is in ``bytes``; members' offsets count from its start.
    package let range: Range<Int>
    let members: [Member]
    /// The keys that are not plain, decoded.
    let texts: [String]

    /// The object's JSON text.
    package var text: ArraySlice<UInt8> { bytes[range] }

    /// The value of the member named `name`, or nil: the lookup of ``JSONValue/subscript(key:)``.
    package subscript(name: String) -> JSONValue? {
        withMember(named: name) { buffer, member in Self.value(of: member, in: buffer) }
    }

    /// The value of the member at `index` (``members(named:)``), as a lookup by its name reads it.
    package func value(at index: Int) -> JSONValue? {
        bytes.withUnsafeBufferPointer { whole in
            Self.value(of: members[index], in: UnsafeBufferPointer(rebasing: whole[range]))
        }
    }

    private static func value(of member: Member, in buffer: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var reader = JSONReader(buffer: UnsafeBufferPointer(rebasing: buffer[member.value]))
        do {
            return try reader.readValue(depth: 1)
        } catch {
            // Not reached: the same reader checked these bytes when it made the view. Were it reached, the
            // claim reads as absent, which every required claim's check refuses.
            assertionFailure("a checked value failed to read again: \(error)")
            return nil
        }
    }

    /// The member at `index` as a string, when it is one in ASCII without escapes (its bytes are its text), made from
    /// those bytes without going through a ``JSONValue``; nil for any other value, which ``value(at:)`` reads.
    package func plainString(at index: Int) -> String? {
        withValue(at: index) { value -> String? in
            Self.plainText(value).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// The member at `index` when it is the literal `true` or `false`; nil for any other value.
    package func literalBool(at index: Int) -> Bool? {
        withValue(at: index) { value -> Bool? in
            // Byte by byte: the general comparison of `text(_:is:)` cost more than the rest of the read.
            if value.count == 4, value[0] == UInt8(ascii: "t"), value[1] == UInt8(ascii: "r"),
                value[2] == UInt8(ascii: "u"), value[3] == UInt8(ascii: "e")
            {
                return true
            }
            if value.count == 5, value[0] == UInt8(ascii: "f"), value[1] == UInt8(ascii: "a"),
                value[2] == UInt8(ascii: "l"), value[3] == UInt8(ascii: "s"), value[4] == UInt8(ascii: "e")
            {
                return false
            }
            return nil
        }
    }

    /// The member at `index` when it is a non-negative integer of up to fifteen digits (exact as a `Double`), read
    /// where it is; nil for any other value, which ``value(at:)`` reads.
    package func smallInteger(at index: Int) -> Int64? {
        withValue(at: index) { Self.smallInteger($0) }
    }

    /// Runs `body` on the JSON text of the member at `index`'s value. (Members' offsets count from the object's
    /// start, so the object's bytes are rebased to zero before a member's range picks from them.)
    private func withValue<T>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        bytes.withUnsafeBufferPointer { whole in
            body(UnsafeBufferPointer(rebasing: UnsafeBufferPointer(rebasing: whole[range])[members[index].value]))
        }
    }

    private static func smallInteger(_ value: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !value.isEmpty, value.count <= 15 else { return nil }
        var result: Int64 = 0
        for byte in value {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            result = result * 10 + Int64(digit)
        }
        return result
    }

    /// Names looked up together (at most ``Found/capacity``): ``members(named:)`` compares each member's key with the
    /// names of its length only, in one walk over the members, where a lookup by name walks them once per name.
    package struct Names: Sendable {
        /// A name: its place in the list (its slot in ``Found``), its first eight bytes (as ``Member/keyPrefix``), its
        /// length, and where its bytes are in ``bytes``.
        struct Entry: Sendable {
            let slot: Int
            let prefix: UInt64
            let count: Int
            let offset: Int
        }

        /// The names in the order given (a key that is not plain is compared with each as a string).
        let names: [String]
        /// The names ordered by length: those of length `n` are `entries[starts[n]..<starts[n + 1]]`. A key longer
        /// than every name is compared with the longest names, and matches none of them.
        let entries: [Entry]
        let starts: [Int]
        /// Every name's UTF-8, one after another.
        let bytes: [UInt8]

        package init(_ names: [String]) {
            precondition(names.count <= Found.capacity, "at most \(Found.capacity) names")
            precondition(Set(names).count == names.count, "each name once: a second one would never be found")
            var entries: [Entry] = []
            var bytes: [UInt8] = []
            for (slot, name) in names.enumerated() {
                let utf8 = Array(name.utf8)
                let prefix = utf8.withUnsafeBufferPointer { JSONObjectView.prefix($0) }
                entries.append(Entry(slot: slot, prefix: prefix, count: utf8.count, offset: bytes.count))
                bytes += utf8
            }
            entries.sort { ($0.count, $0.slot) < ($1.count, $1.slot) }
            let longest = entries.last?.count ?? 0
            self.names = names
            self.entries = entries
            self.starts = (0...(longest + 1)).map { length in entries.count { $0.count < length } }
            self.bytes = bytes
        }
    }

    /// Where the members of ``Names`` are: for each name (by its place in the list), the index of the member of that
    /// name, or nil; what ``subscript(name:)`` would find by that name (keys are unique). Kept inline, not in an array.
    package struct Found {
        package static let capacity = 16
        private var indexes: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
            -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1
        )

        package subscript(name: Int) -> Int? {
            precondition(name >= 0 && name < Self.capacity, "a name's place in its list")
            let index = withUnsafeBytes(of: indexes) {
                $0.load(fromByteOffset: name * MemoryLayout<Int>.stride, as: Int.self)
            }
            return index < 0 ? nil : index
        }

        fileprivate mutating func set(_ name: Int, _ index: Int) {
            precondition(name >= 0 && name < Self.capacity, "a name's place in its list")
            withUnsafeMutableBytes(of: &indexes) {
                $0.storeBytes(of: index, toByteOffset: name * MemoryLayout<Int>.stride, as: Int.self)
            }
        }
    }

    /// Where the members named `names` are, found in one walk over the members.
    package func members(named names: Names) -> Found {
        var found = Found()
        bytes.withUnsafeBufferPointer { whole in
            let buffer = UnsafeBufferPointer(rebasing: whole[range])
            names.entries.withUnsafeBufferPointer { entries in
                names.bytes.withUnsafeBufferPointer { nameBytes in
                    for (index, member) in members.enumerated() {
                        // A key with escapes or other than ASCII may be any name (compared as strings, as a lookup
                        // compares it); a plain key only one of its length.
                        var candidates = 0..<entries.count
                        if member.text < 0 {
                            let length = min(member.keyEnd - member.keyStart, names.starts.count - 2)
                            candidates = names.starts[length]..<names.starts[length + 1]
                        }
                        for entry in entries[candidates] {
                            let bytes = UnsafeBufferPointer(
                                rebasing: nameBytes[entry.offset..<(entry.offset + entry.count)]
                            )
                            let name = names.names[entry.slot]
                            if key(of: member, in: buffer, is: name, bytes: bytes, prefix: entry.prefix) {
                                found.set(entry.slot, index)
                                break
                            }
                        }
                    }
                }
            }
        }
        return found
    }

    /// The one of `candidates` that the member named `name` is a string equal to, or nil: when the member is a
    /// plain ASCII string, its bytes are compared where they are, and no string is made. The candidates are ASCII
    /// (Apple's issuers): a plain string equals an ASCII candidate exactly when their bytes are equal, so a plain
    /// string that matches none is no candidate's.
    package func string(_ name: String, isOneOf candidates: [String]) -> String? {
        assert(candidates.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }, "candidates compared as bytes are ASCII")
        let plain = withPlainString(name) { text in candidates.first { Self.text(text, is: $0) } }
        switch plain {
        case .absent: return nil
        case .plain(let found): return found
        case .notPlain:
            // Escaped or not ASCII: compared as strings.
            guard let value = self[name]?.stringValue else { return nil }
            return candidates.first { $0 == value }
        }
    }

    /// What ``withPlainString(_:_:)`` found.
    package enum PlainString<T> {
        /// No member of that name.
        case absent
        /// A string in ASCII without escapes (its bytes are its text), and what the body made of them.
        case plain(T)
        /// Any other value: a string with escapes or other than ASCII, or not a string.
        case notPlain
    }

    /// Runs `body` on the text of the member named `name` where it is in the object, when that member is a string in
    /// ASCII without escapes; a caller compares those bytes without making a string, and reads any other value the
    /// usual way (``subscript(name:)``). Bytes equal to a string's are the same string; bytes that differ can still be
    /// an equal `String` (canonical equivalence) when the other string is not ASCII, so a caller whose strings may not
    /// be ASCII goes the usual way too when it finds no match.
    package func withPlainString<T>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> PlainString<T> {
        let found = withMember(named: name) { buffer, member -> PlainString<T>? in
            guard let text = Self.plainText(UnsafeBufferPointer(rebasing: buffer[member.value])) else {
                return .notPlain
            }
            return .plain(body(text))
        }
        return found ?? .absent
    }

    /// The text of a value that is a string in ASCII without escapes (the bytes between its quotes), or nil.
    private static func plainText(_ value: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        var reader = JSONReader(buffer: value)
        guard value.first == UInt8(ascii: "\""), let end = reader.scanPlainString() else { return nil }
        return UnsafeBufferPointer(rebasing: value[1..<end])
    }

    /// Whether `member`'s key is the name whose UTF-8 is `nameBytes` (first eight bytes `namePrefix`): a plain key by
    /// its bytes, any other by `String`'s equality, as ``JSONMember/hasKey(_:)`` decides.
    @inline(__always)
    private func key(
        of member: Member,
        in buffer: UnsafeBufferPointer<UInt8>,
        is name: String,
        bytes nameBytes: UnsafeBufferPointer<UInt8>,
        prefix namePrefix: UInt64
    ) -> Bool {
        if member.text >= 0 {
            let text = texts[member.text]
            return text.utf8.count == nameBytes.count && text == name
        }
        guard member.keyPrefix == namePrefix, member.keyEnd - member.keyStart == nameBytes.count else { return false }
        var offset = 8
        while offset < nameBytes.count, buffer[member.keyStart + offset] == nameBytes[offset] { offset += 1 }
        return offset >= nameBytes.count
    }

    /// Whether `text` is `string`'s UTF-8, byte for byte: how a plain string (``withPlainString(_:_:)``) is compared.
    static func text(_ text: UnsafeBufferPointer<UInt8>, is string: String) -> Bool {
        var string = string
        return string.withUTF8 { $0.count == text.count && sameBytes($0, text) }
    }

    /// Whether two buffers of one length hold the same bytes, compared eight at a time (`elementsEqual` compared
    /// them one by one, through the general sequence comparison).
    static func sameBytes(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        precondition(lhs.count == rhs.count, "buffers of one length")
        guard let left = lhs.baseAddress, let right = rhs.baseAddress else { return true }
        var offset = 0
        while offset + 8 <= lhs.count {
            let a = UnsafeRawPointer(left + offset).loadUnaligned(as: UInt64.self)
            let b = UnsafeRawPointer(right + offset).loadUnaligned(as: UInt64.self)
            guard a == b else { return false }
            offset += 8
        }
        while offset < lhs.count {
            guard left[offset] == right[offset] else { return false }
            offset += 1
        }
        return true
    }

    /// The member named `name` as a `Double`, as `self[name]?.doubleValue` reads it: a non-negative integer of up to
    /// fifteen digits (every numeric date Apple sends; exact as a `Double`) is read where it is, with no string made
    /// for it; any other value the usual way.
    package func number(_ name: String) -> Double? {
        let integer = withMember(named: name) { buffer, member -> Double? in
            Self.smallInteger(UnsafeBufferPointer(rebasing: buffer[member.value])).map(Double.init)
        }
        return integer ?? self[name]?.doubleValue
    }

    /// Runs `body` on the member named `name` and the object's bytes, or returns nil when there is none.
    private func withMember<T>(
        named name: String,
        _ body: (UnsafeBufferPointer<UInt8>, Member) -> T?
    ) -> T? {
        var utf8 = name
        return utf8.withUTF8 { nameBytes -> T? in
            let namePrefix = Self.prefix(nameBytes)
            return bytes.withUnsafeBufferPointer { whole -> T? in
                let buffer = UnsafeBufferPointer(rebasing: whole[range])
                for member in members
                where key(of: member, in: buffer, is: name, bytes: nameBytes, prefix: namePrefix) {
                    return body(buffer, member)
                }
                return nil
            }
        }
    }

    /// The first eight bytes of `bytes`, zero-filled when fewer.
    @inline(__always)
    static func prefix(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard let base = bytes.baseAddress else { return 0 }
        if bytes.count >= 8 { return UnsafeRawPointer(base).loadUnaligned(as: UInt64.self).littleEndian }
        var prefix: UInt64 = 0
        for offset in 0..<bytes.count { prefix |= UInt64(base[offset]) << (8 * offset) }
        return prefix
    }

    /// Whether two keys are the same key, as ``JSONMember/hasKey(_:)`` decides: the same UTF-8 length, then
    /// `String`'s equality (canonical equivalence), which for two plain ASCII keys is equality of their bytes.
    static func sameKey(_ lhs: Member, _ rhs: Member, _ buffer: UnsafeBufferPointer<UInt8>, _ texts: [String]) -> Bool {
        if lhs.text < 0 && rhs.text < 0 {
            return lhs.keyPrefix == rhs.keyPrefix && lhs.keyEnd - lhs.keyStart == rhs.keyEnd - rhs.keyStart
                && sameBytes(
                    UnsafeBufferPointer(rebasing: buffer[lhs.keyStart..<lhs.keyEnd]),
                    UnsafeBufferPointer(rebasing: buffer[rhs.keyStart..<rhs.keyEnd])
                )
        }
        guard byteCount(lhs, texts) == byteCount(rhs, texts) else { return false }
        return text(lhs, buffer, texts) == text(rhs, buffer, texts)
    }

    private static func byteCount(_ key: Member, _ texts: [String]) -> Int {
        key.text >= 0 ? texts[key.text].utf8.count : key.keyEnd - key.keyStart
    }

    private static func text(_ key: Member, _ buffer: UnsafeBufferPointer<UInt8>, _ texts: [String]) -> String {
        key.text >= 0
            ? texts[key.text]
            : String(decoding: UnsafeBufferPointer(rebasing: buffer[key.keyStart..<key.keyEnd]), as: UTF8.self)
    }
}
