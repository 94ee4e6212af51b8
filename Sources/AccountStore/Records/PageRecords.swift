#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a paged listing goes on (``AccountStore/searchUsers(_:limit:after:)``,
/// ``AccountStore/auditEvents(_:limit:after:)``): the sort key of the last item answered.
///
/// Callers treat it as opaque text (``description`` and ``init(_:)``, e.g. in a URL); the store that made it reads
/// its ``parts``. A cursor names a position, not an item, so pages neither repeat nor skip an item when others are
/// inserted or deleted meanwhile.
public struct PageCursor: Sendable, Hashable, LosslessStringConvertible {
    /// The sort key's parts, written and read by the store.
    public let parts: [String]

    /// A cursor of the store's own parts.
    public init(parts: [String]) {
        self.parts = parts
    }

    /// Reads a cursor's text form; `nil` for text no store made.
    public init?(_ description: String) {
        guard description.utf8.count <= 4_096, let data = Self.base64URLDecoded(description) else { return nil }
        var parts: [String] = []
        var rest = Substring(decoding: data, as: UTF8.self).utf8[...]
        while !rest.isEmpty {
            guard let colon = rest.firstIndex(of: UInt8(ascii: ":")),
                let length = Int(String(decoding: rest[..<colon], as: UTF8.self)), length >= 0
            else { return nil }
            let start = rest.index(after: colon)
            guard let end = rest.index(start, offsetBy: length, limitedBy: rest.endIndex) else { return nil }
            parts.append(String(decoding: rest[start..<end], as: UTF8.self))
            rest = rest[end...]
        }
        self.parts = parts
    }

    /// The text form: base64url of the length-prefixed parts.
    public var description: String {
        var bytes: [UInt8] = []
        for part in parts {
            bytes += Array("\(part.utf8.count):".utf8) + Array(part.utf8)
        }
        return Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    private static func base64URLDecoded(_ text: String) -> Data? {
        guard
            text.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F
            })
        else { return nil }
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// One page of a listing, and where the next one starts.
public struct Page<Item: Sendable & Hashable>: Sendable, Hashable {
    public var items: [Item]
    /// The cursor of the next page, or `nil` when this is the last one.
    public var next: PageCursor?

    public init(items: [Item], next: PageCursor?) {
        self.items = items
        self.next = next
    }
}

/// How searches compare names and emails: the same key in every store.
///
/// Stores keep each searchable text's key beside it (SQL: `users.email_key`, `given_name_key`, `family_name_key`)
/// and compare keys by their UTF-8 bytes, so that a prefix is one index range on SQLite and PostgreSQL alike.
/// The key is computed here, in Swift, because SQLite's `lower()` folds ASCII letters only.
public enum SearchKey {
    /// `text` lower-cased with Unicode's default case mapping (`Élodie` and `ÉLODIE` give `élodie`; ASCII text as
    /// SQL's `lower` gives it). Not normalized: a decomposed `é` stays two scalars.
    public static func of(_ text: String) -> String {
        text.lowercased()
    }

    /// The smallest key above every key that starts with `prefix`: a prefix search is `key >= prefix AND key < upper`
    /// in byte order.
    public static func upperBound(ofPrefix prefix: String) -> String {
        prefix + "\u{10FFFF}"
    }
}

/// How many accounts exist, for the console's overview. Deleted (and anonymised) accounts are not counted.
public struct AccountTotals: Sendable, Hashable {
    public var total: Int
    /// For each time asked about, how many accounts were created at or after it.
    public var createdSince: [Date: Int]

    public init(total: Int, createdSince: [Date: Int]) {
        self.total = total
        self.createdSince = createdSince
    }
}
