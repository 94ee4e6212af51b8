/// Text that a client chose, made safe to show in an error reason or a log line.
///
/// A refusal's reason goes to the caller and to the log, and some reasons name what the request sent (the `kid` or
/// `alg` of a token's header, a field's name) before anything about the request is verified. Such a value is quoted
/// only when it is short and plain; anything else is described, never shown. Log handlers escape every value as well
/// (``escaped(_:)``), so that no client writes a line of its own or a terminal's control sequence into a log.
package enum LoggedText {
    /// `'value'` when `value` is at most `limit` bytes of printable ASCII other than quotes and backslashes; else a
    /// description that shows none of it, such as `(a value of 300 bytes, not shown)`.
    ///
    /// - Parameters:
    ///   - value: What the client sent.
    ///   - limit: The longest value shown, in bytes.
    /// - Returns: The value in single quotes, or the description.
    package static func quoted(_ value: some StringProtocol, limit: Int) -> String {
        let bytes = value.utf8
        guard bytes.count <= limit, bytes.allSatisfy(isPlain) else {
            return "(a value of \(bytes.count) bytes, not shown)"
        }
        return "'" + String(value) + "'"
    }

    /// Whether a byte is printable ASCII other than `'`, `"` and `\`.
    @inline(__always)
    private static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "\"")
            && byte != UInt8(ascii: "\\")
    }

    /// `text` with every control character escaped: `\n`, `\r`, `\t`, `\\` for a backslash, and `\u{…}` for the
    /// other C0 and C1 controls, DEL and the Unicode line and paragraph separators. Text that has none is returned as
    /// it is, without a copy. (Bytes that were not UTF-8 are already U+FFFD in a Swift string.)
    ///
    /// - Parameter text: A value about to be written to a text log line.
    /// - Returns: The value on one line, with nothing a terminal acts on.
    package static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: mayNeedEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x5C: out += "\\\\"
            case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029:
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A byte that is, or may start, something to escape: a C0 control, DEL, a backslash, or the first byte of a C1
    /// control (`C2 80`–`C2 9F` in UTF-8) or of a line or paragraph separator (`E2 80 A8`, `E2 80 A9`).
    @inline(__always)
    private static func mayNeedEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\\") || byte == 0xC2 || byte == 0xE2
    }
}
