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
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, times, tokens, names) need no escape: copied at once rather than byte by byte.
        if string.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(contentsOf: string.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
