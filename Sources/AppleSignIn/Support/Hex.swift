/// Lower-case hex, as siwa prints hashes and ids; decoding takes either case.
package enum Hex {
    /// The lower-case digits, by value.
    package static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex, written straight into the string's storage (a refresh token's hash is written on
    /// every sign-in and refresh).
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable(encode(buffer:)) { return text }
        return Array(bytes).withUnsafeBufferPointer(encode(buffer:))
    }

    private static func encode(buffer bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            digits.withUnsafeBufferPointer { digits in
                var written = 0
                for byte in bytes {
                    text[written] = digits[Int(byte &>> 4)]
                    text[written + 1] = digits[Int(byte & 0x0F)]
                    written += 2
                }
                return written
            }
        }
    }

    /// The bytes of a hex string (either case), or `nil`.
    package static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = value(characters[index]), let low = value(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit (either case), or `nil`.
    package static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
