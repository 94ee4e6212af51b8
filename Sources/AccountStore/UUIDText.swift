import AppleSignIn
import Synchronization

#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// UUIDs made, written and read on the request path without Foundation's C helpers, which on Linux open, read and
/// close `/dev/urandom` for every new UUID, and format and parse the text form with `sprintf` and `sscanf` (together
/// about 4% of a sign-in's CPU). ``random()`` makes the same kind of value as Foundation's `UUID()`, and the
/// text is the same as Foundation's; ``timeOrdered()`` has no Foundation counterpart.
extension UUID {
    /// A random (version 4, variant 10) UUID from the system's generator (one `getrandom`, no file descriptor).
    package static func random() -> UUID {
        var words: (high: UInt64, low: UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { SystemRandom.fill($0) }
        let (high, low) = words
        let time = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        let clock = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10
        return UUID(high: time, low: clock)
    }

    /// A time-ordered (version 7, RFC 9562) UUID: the Unix time in milliseconds, a 12-bit counter, then 62 random
    /// bits from the system's generator. Ids made later in this process sort after earlier ones, also within one
    /// millisecond (past 4,096 ids in one, the next millisecond is borrowed). Rows keyed by such ids are appended to
    /// their indexes instead of landing on a random page each, so that the writes of one commit share pages.
    package static func timeOrdered() -> UUID {
        let (milliseconds, counter) = timeOrderedClock.withLock { state -> (UInt64, UInt64) in
            let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
            if now > state.milliseconds {
                state = (now, 0)
            } else if state.counter < 0xFFF {
                state.counter += 1
            } else {
                state = (state.milliseconds + 1, 0)
            }
            return (state.milliseconds, UInt64(state.counter))
        }
        var generator = SystemRandomNumberGenerator()
        let tail = generator.next() as UInt64
        let time = milliseconds << 16 | 0x7000 | counter  // 48 bits of time, version 7, the counter
        let clock = (tail & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10
        return UUID(high: time, low: clock)
    }

    /// The UUID whose first eight bytes are `high` and last eight `low`, most significant byte first.
    private init(high: UInt64, low: UInt64) {
        self.init(
            uuid: (
                UInt8(truncatingIfNeeded: high >> 56), UInt8(truncatingIfNeeded: high >> 48),
                UInt8(truncatingIfNeeded: high >> 40), UInt8(truncatingIfNeeded: high >> 32),
                UInt8(truncatingIfNeeded: high >> 24), UInt8(truncatingIfNeeded: high >> 16),
                UInt8(truncatingIfNeeded: high >> 8), UInt8(truncatingIfNeeded: high),
                UInt8(truncatingIfNeeded: low >> 56), UInt8(truncatingIfNeeded: low >> 48),
                UInt8(truncatingIfNeeded: low >> 40), UInt8(truncatingIfNeeded: low >> 32),
                UInt8(truncatingIfNeeded: low >> 24), UInt8(truncatingIfNeeded: low >> 16),
                UInt8(truncatingIfNeeded: low >> 8), UInt8(truncatingIfNeeded: low)
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

/// The last time-ordered id's millisecond and counter (``Foundation/UUID/timeOrdered()``).
private let timeOrderedClock = Mutex<(milliseconds: UInt64, counter: UInt16)>((0, 0))
