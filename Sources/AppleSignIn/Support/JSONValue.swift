/// A parsed JSON value.
///
/// siwa reads the small JSON documents of Sign in with Apple (JWT headers and claims, the `events` claim, the
/// `form_post` `user` field, Apple's token responses) with ``JSONReader`` instead of `JSONDecoder`: one pass, no
/// reflection, duplicate keys refused, depth and size bounded. This is most of why verification costs little more
/// than the RSA check itself.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, kept as the text that was read so that integers of any size survive until a reader interprets them.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order. Keys are unique (the reader refuses duplicates).
    case object([JSONMember])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a == b
        default: return false
        }
    }

    /// The member named `key` of an object, or `nil`.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.hasKey(key) }?.value
    }

    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// An integer when the number is one and fits in `Int64`.
    package var int64Value: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
    }

    /// The number as a `Double`, for numeric dates (which may carry a fraction).
    package var doubleValue: Double? {
        // Integers (every numeric date Apple sends) skip the C library's strtod.
        if case .number(let text) = self { return Int64(text).map(Double.init) ?? Double(text) }
        return nil
    }

    /// A boolean given either as JSON `true`/`false` or as the strings `"true"`/`"false"`, the two forms Apple has used
    /// for `email_verified` and `is_private_email`.
    package var lenientBoolValue: Bool? {
        switch self {
        case .bool(let value): return value
        case .string("true"): return true
        case .string("false"): return false
        default: return nil
        }
    }
}

/// One member of a JSON object. A nominal type rather than a tuple, so arrays of members need no generic metadata
/// instantiated at run time on the verification path.
package struct JSONMember: Sendable, Equatable {
    package var key: String
    package var value: JSONValue

    package init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }

    /// Whether the member is named `name`. The lengths are compared first: `String`'s `==` on two strings that are
    /// not the same value calls into the standard library's general comparison, and a claims object is searched by
    /// name about twenty times per token, with each key also compared with the ones before it while it is read.
    ///
    /// JSON compares member names by their bytes (RFC 8259, section 8.3); `==` also matches canonically equivalent
    /// strings. Names siwa looks up are ASCII, which is equivalent only to itself, so lookups are exact; for duplicates,
    /// two different but equivalent keys of one length are refused as a duplicate, which is only stricter. (Comparing
    /// the bytes with `elementsEqual` instead cost 2–3 points of the verification benchmark.)
    @inline(__always)
    package func hasKey(_ name: String) -> Bool {
        key.utf8.count == name.utf8.count && key == name
    }
}
