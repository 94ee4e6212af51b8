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

    /// The decode table four times, each value already shifted to its place in a group's 24 bits (the first
    /// character's by 18, the second's by 12, the third's by 6, the fourth's not), and 0xFF00_0000 for a byte not in
    /// the alphabet: a group of four is the OR of four lookups, and invalid when the OR has a high byte.
    private static let shiftedTables: [UInt32] = {
        var tables = [UInt32](repeating: 0xFF00_0000, count: 4 * 256)
        for (index, byte) in alphabet.enumerated() {
            for place in 0..<4 { tables[place * 256 + Int(byte)] = UInt32(index) << (18 - 6 * place) }
        }
        return tables
    }()

    /// Decodes `input`, or returns `nil` when it is not canonical unpadded base64url.
    package static func decode(_ input: some Collection<UInt8>) -> [UInt8]? {
        if let result = input.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return result }
        return Array(input).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// The number of bytes `count` characters of unpadded base64url decode to, or nil for a length no encoding has.
    package static func decodedCount(_ count: Int) -> Int? {
        let remainder = count % 4
        return remainder == 1 ? nil : count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
    }

    private static func decode(buffer input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let outputCount = decodedCount(input.count) else { return nil }
        var valid = false
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
            valid = decode(input, into: out.baseAddress)
            initialized = valid ? outputCount : 0
        }
        return valid ? output : nil
    }

    /// The decoder proper, into memory the caller provides (``decodedCount(_:)`` bytes; a token's parts are decoded
    /// side by side into one buffer): four characters to three bytes at a time, one table lookup per character.
    /// Returns whether `input` was canonical unpadded base64url; when not, what was written is to be ignored.
    package static func decode(_ input: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>?) -> Bool {
        let count = input.count
        let remainder = count % 4
        guard remainder != 1 else { return false }
        guard count > 0, let out else { return count == 0 }
        var read = 0
        var written = 0
        let fast = shiftedTables.withUnsafeBufferPointer { tables -> Bool in
            // Each group stored as four bytes, the fourth of which the next group overwrites: while at least eight
            // characters remain, another group follows, so the store stays within this input's own output.
            while read + 8 <= count {
                let triple =
                    tables[Int(input[read])] | tables[256 + Int(input[read + 1])]
                    | tables[512 + Int(input[read + 2])] | tables[768 + Int(input[read + 3])]
                if triple & 0xFF00_0000 != 0 { return false }
                UnsafeMutableRawPointer(out + written).storeBytes(of: (triple << 8).bigEndian, as: UInt32.self)
                read += 4
                written += 3
            }
            return true
        }
        guard fast else { return false }
        return decodeTable.withUnsafeBufferPointer { table -> Bool in
            while read + 4 <= count {
                let a = UInt32(table[Int(input[read])])
                let b = UInt32(table[Int(input[read + 1])])
                let c = UInt32(table[Int(input[read + 2])])
                let d = UInt32(table[Int(input[read + 3])])
                if (a | b | c | d) & 0xC0 != 0 { return false }
                let triple = a << 18 | b << 12 | c << 6 | d
                out[written] = UInt8(truncatingIfNeeded: triple >> 16)
                out[written + 1] = UInt8(truncatingIfNeeded: triple >> 8)
                out[written + 2] = UInt8(truncatingIfNeeded: triple)
                read += 4
                written += 3
            }
            guard remainder >= 2 else { return true }
            let a = UInt32(table[Int(input[read])])
            let b = UInt32(table[Int(input[read + 1])])
            let c = remainder == 3 ? UInt32(table[Int(input[read + 2])]) : 0
            // Leftover bits must be zero padding, so every byte string has exactly one encoding.
            if (a | b | c) & 0xC0 != 0 || (remainder == 2 ? b & 0x0F : c & 0x03) != 0 { return false }
            out[written] = UInt8(truncatingIfNeeded: a << 2 | b >> 4)
            if remainder == 3 { out[written + 1] = UInt8(truncatingIfNeeded: b << 4 | c >> 2) }
            return true
        }
    }

    /// Decodes a string, or returns `nil` when it is not canonical unpadded base64url.
    package static func decode(_ input: String) -> [UInt8]? {
        var input = input
        return input.withUTF8 { decode($0) }
    }

    /// Encodes `bytes` as unpadded base64url.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        // Generic code called from another module runs unspecialised (an iterator through witness tables per byte:
        // 2% of a sign-in's CPU when the access token's signature was encoded that way); contiguous bytes, which is
        // every caller, take the buffer path.
        if let result = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0) }) { return result }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0) }
    }

    /// The encoder proper: three bytes to four characters at a time.
    private static func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let count = input.count
        let remainder = count % 3
        let outputCount = count / 3 * 4 + (remainder == 0 ? 0 : remainder + 1)
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: outputCount) { out in
                var read = 0
                var written = 0
                while read + 3 <= count {
                    let triple = UInt32(input[read]) << 16 | UInt32(input[read + 1]) << 8 | UInt32(input[read + 2])
                    out[written] = alphabet[Int(triple >> 18)]
                    out[written + 1] = alphabet[Int(triple >> 12 & 0x3F)]
                    out[written + 2] = alphabet[Int(triple >> 6 & 0x3F)]
                    out[written + 3] = alphabet[Int(triple & 0x3F)]
                    read += 3
                    written += 4
                }
                if remainder > 0 {
                    let second = remainder == 2 ? UInt32(input[read + 1]) : 0
                    let pair = UInt32(input[read]) << 16 | second << 8
                    out[written] = alphabet[Int(pair >> 18)]
                    out[written + 1] = alphabet[Int(pair >> 12 & 0x3F)]
                    written += 2
                    if remainder == 2 {
                        out[written] = alphabet[Int(pair >> 6 & 0x3F)]
                        written += 1
                    }
                }
                return written
            }
        }
    }
}
