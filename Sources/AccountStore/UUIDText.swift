import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// UUIDs made, written and read on the request path without Foundation's C helpers, which on Linux open, read and
/// close `/dev/urandom` for every new UUID, and format and parse the text form with `sprintf` and `sscanf` (together
/// about 4% of a sign-in's CPU, issue 21). Same values and the same text as Foundation's.
extension UUID {
    /// A random (version 4, variant 10) UUID from the system's generator (`getrandom`, no file descriptor).
    package static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        let time = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        let clock = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10
        return UUID(
            uuid: (
                UInt8(truncatingIfNeeded: time >> 56), UInt8(truncatingIfNeeded: time >> 48),
                UInt8(truncatingIfNeeded: time >> 40), UInt8(truncatingIfNeeded: time >> 32),
                UInt8(truncatingIfNeeded: time >> 24), UInt8(truncatingIfNeeded: time >> 16),
                UInt8(truncatingIfNeeded: time >> 8), UInt8(truncatingIfNeeded: time),
                UInt8(truncatingIfNeeded: clock >> 56), UInt8(truncatingIfNeeded: clock >> 48),
                UInt8(truncatingIfNeeded: clock >> 40), UInt8(truncatingIfNeeded: clock >> 32),
                UInt8(truncatingIfNeeded: clock >> 24), UInt8(truncatingIfNeeded: clock >> 16),
                UInt8(truncatingIfNeeded: clock >> 8), UInt8(truncatingIfNeeded: clock)
            )
        )
    }

    /// The lower-case text form (`uuidString.lowercased()`).
    package var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var written = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[written] = UInt8(ascii: "-")
                        written += 1
                    }
                    text[written] = Hex.digits[Int(byte >> 4)]
                    text[written + 1] = Hex.digits[Int(byte & 0x0F)]
                    written += 2
                }
                return written
            }
        }
    }

    /// Parses the text form, in either case (as `UUID(uuidString:)`): 8-4-4-4-12 hexadecimal digits.
    package init?(text: String) {
        var text = text
        guard let uuid = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = uuid
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &bytes) { output -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = Hex.value(text[position]), let low = Hex.value(text[position + 1]) else {
                    return false
                }
                output[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return parsed ? UUID(uuid: bytes) : nil
    }
}
