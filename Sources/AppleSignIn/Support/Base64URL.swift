/// Base64url without padding (RFC 4648 §5), as JWS compact serialisation uses it.
///
/// Decoding is strict: only the URL-safe alphabet, no padding, no white space, and the unused trailing bits must be
/// zero, so every byte string has exactly one accepted encoding.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value, or 0xFF when it is not in the alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Decodes `input`, or returns `nil` when it is not canonical unpadded base64url.
    package static func decode(_ input: some Collection<UInt8>) -> [UInt8]? {
        let count = input.count
        if count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(count * 3 / 4)
        return decodeTable.withUnsafeBufferPointer { table -> [UInt8]? in
            var accumulator: UInt32 = 0
            var bits = 0
            for byte in input {
                let value = table[Int(byte)]
                if value == 0xFF { return nil }
                accumulator = (accumulator << 6) | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            // Leftover bits must be zero padding.
            if bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
            return output
        }
    }

    /// Decodes a string, or returns `nil` when it is not canonical unpadded base64url.
    package static func decode(_ input: String) -> [UInt8]? {
        var input = input
        return input.withUTF8 { decode($0) }
    }

    /// Encodes `bytes` as unpadded base64url.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int((accumulator >> UInt32(bits)) & 0x3F)])
            }
        }
        if bits > 0 {
            output.append(alphabet[Int((accumulator << UInt32(6 - bits)) & 0x3F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
