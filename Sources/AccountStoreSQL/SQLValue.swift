import AccountStore
import SQLiteNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How the store writes Swift values into its dialect-neutral columns, and reads them back.
///
/// Times are BIGINT milliseconds since 1970, hashes lower-case hex TEXT, sealed blobs base64 TEXT, ids lower-case UUID
/// TEXT, booleans INTEGER 0 or 1.
enum SQLValue {
    /// Milliseconds since 1970, rounded to the nearest millisecond.
    ///
    /// - Throws: ``StoreError/Code/invalidInput`` for a time that does not fit.
    static func milliseconds(_ date: Date) throws(StoreError) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000).rounded()
        guard value.isFinite, value > -9.2e18, value < 9.2e18 else {
            throw StoreError(.invalidInput, "a time is out of range")
        }
        return Int64(value)
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }

    static func flag(_ value: Bool) -> Int64 { value ? 1 : 0 }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A hex column's bytes.
    ///
    /// - Throws: ``StoreError/Code/corrupt`` for text that is not even-length lower- or upper-case hex.
    static func bytes(hex text: String) throws(StoreError) -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count.isMultiple(of: 2) else { throw StoreError(.corrupt, "a stored hash is not hex") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else {
                throw StoreError(.corrupt, "a stored hash is not hex")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    /// A base64 column's bytes.
    ///
    /// - Throws: ``StoreError/Code/corrupt`` for text that is not base64.
    static func bytes(base64 text: String) throws(StoreError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw StoreError(.corrupt, "a stored blob is not base64") }
        return Array(data)
    }

    static func userID(_ text: String) throws(StoreError) -> UserID {
        guard let id = UserID(text) else { throw StoreError(.corrupt, "a stored user id is not a UUID") }
        return id
    }

    static func sessionID(_ text: String) throws(StoreError) -> SessionID {
        guard let id = SessionID(text) else { throw StoreError(.corrupt, "a stored session id is not a UUID") }
        return id
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension SQLiteData {
    /// A text value, or NULL.
    static func optional(_ text: String?) -> SQLiteData { text.map { .text($0) } ?? .null }

    /// An integer value, or NULL.
    static func optional(_ integer: Int64?) -> SQLiteData { integer.map { .integer(Int($0)) } ?? .null }
}
