/// `application/x-www-form-urlencoded` and URL query encoding.
package enum FormURLEncoding {
    /// Percent-encodes everything but RFC 3986's unreserved characters, so a space is `%20` (as Apple's
    /// `scope=name%20email`), never `+`.
    package static func percentEncode(_ string: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes name-value pairs in order.
    package static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(percentEncode($0.0))=\(percentEncode($0.1))" }.joined(separator: "&")
    }

    /// Decodes a form body. `+` is a space; `%XX` must be valid hex; the result must be UTF-8; a name given twice is
    /// refused (so a field cannot mean one thing here and another to a proxy).
    package static func decode(_ body: some Collection<UInt8>) -> [String: String]? {
        var fields: [String: String] = [:]
        let bytes = Array(body)
        if bytes.isEmpty { return fields }
        for part in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let name: ArraySlice<UInt8>
            let value: ArraySlice<UInt8>
            if let equals = part.firstIndex(of: UInt8(ascii: "=")) {
                name = part[part.startIndex..<equals]
                value = part[(equals + 1)...]
            } else {
                name = part
                value = []
            }
            guard let decodedName = percentDecode(name), let decodedValue = percentDecode(value),
                fields[decodedName] == nil
            else { return nil }
            fields[decodedName] = decodedValue
        }
        return fields
    }

    /// Decodes a form body or a query leniently, for answering a request that ``decode(_:)`` refuses: every pair in
    /// order, a name given twice kept each time, `+` a space, and a name or value whose escapes are not valid (or not
    /// UTF-8) kept as written.
    package static func lenientPairs(_ body: some Collection<UInt8>) -> [(name: String, value: String)] {
        Array(body).split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).map { part in
            let equals = part.firstIndex(of: UInt8(ascii: "=")) ?? part.endIndex
            let name = part[part.startIndex..<equals]
            let value = equals < part.endIndex ? part[(equals + 1)...] : []
            return (
                percentDecode(name) ?? String(decoding: name, as: UTF8.self),
                percentDecode(value) ?? String(decoding: value, as: UTF8.self)
            )
        }
    }

    /// Decodes one form-encoded component (`+` a space, `%XX` escapes): `nil` when an escape is not valid or the
    /// result is not UTF-8.
    package static func decodeComponent(_ text: some StringProtocol) -> String? {
        percentDecode(ArraySlice(text.utf8))
    }

    private static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        percentDecode(bytes, plusIsSpace: true).flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// Decodes `%XX` escapes (and, in forms, `+` as a space); `nil` for a `%` not followed by two hex digits.
    static func percentDecode(_ bytes: some Collection<UInt8>, plusIsSpace: Bool) -> [UInt8]? {
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if plusIsSpace, byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
                index += 1
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
