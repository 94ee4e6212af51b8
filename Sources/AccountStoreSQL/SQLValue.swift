import AccountStore
import AppleSignIn
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

    /// `value` as the JSON text a column keeps: sorted keys and `/` unescaped, so that one value is always one text.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    /// A hex column's bytes.
    ///
    /// - Throws: ``StoreError/Code/corrupt`` for text that is not even-length lower- or upper-case hex.
    static func bytes(hex text: String) throws(StoreError) -> [UInt8] {
        guard let bytes = Hex.decode(text) else { throw StoreError(.corrupt, "a stored hash is not hex") }
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
}

extension SQLiteData {
    /// A text value, or NULL.
    static func optional(_ text: String?) -> SQLiteData { text.map { .text($0) } ?? .null }

    /// An integer value, or NULL.
    static func optional(_ integer: Int64?) -> SQLiteData { integer.map { .integer(Int($0)) } ?? .null }
}
