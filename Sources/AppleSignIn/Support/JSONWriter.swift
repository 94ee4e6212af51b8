/// Writes the few JSON documents siwa produces itself (JWT headers and claims of client secrets), with correct string
/// escaping. Keys are written in the order given.
package enum JSONWriter {
    /// A JSON scalar to write.
    package enum Scalar {
        case string(String)
        case integer(Int64)
        case bool(Bool)
    }

    /// Serialises a flat object.
    package static func object(_ members: KeyValuePairs<String, Scalar>) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for (key, value) in members {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .string(let string): appendString(string, to: &out)
            case .integer(let integer): out.append(contentsOf: String(integer).utf8)
            case .bool(let bool): out.append(contentsOf: (bool ? "true" : "false").utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Appends `string` as a quoted JSON string.
    package static func appendString(_ string: String, to out: inout [UInt8]) {
        // One pass over the string's bytes where they are, copying each run that needs no escape at once: most
        // strings (ids, times, tokens, names) are one run. (`utf8.allSatisfy` with a closure per byte, before the
        // copy, was 0.8% of a sign-in's CPU: the access and refresh tokens are written on every sign-in.)
        var string = string
        string.withUTF8 { bytes in
            out.append(UInt8(ascii: "\""))
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                appendEscape(byte, to: &out)
                runStart = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            out.append(UInt8(ascii: "\""))
        }
    }

    private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            out.append(Hex.digits[Int(byte >> 4)])
            out.append(Hex.digits[Int(byte & 0xF)])
        }
    }
}
