/// The one error type of the storage layer. Equal when their codes are equal.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: String, Sendable {
            case duplicate, notFound, unavailable, corrupt, invalidInput, newerSchema
        }
        fileprivate let value: Value
        fileprivate init(_ value: Value) { self.value = value }
        public var description: String { value.rawValue }

        /// A unique key already exists (a unique-constraint violation in SQL).
        public static let duplicate = Code(.duplicate)
        /// The record to change does not exist.
        public static let notFound = Code(.notFound)
        /// The database cannot be reached or refused the operation for a transient reason.
        public static let unavailable = Code(.unavailable)
        /// Stored data could not be read back (a schema or encoding problem).
        public static let corrupt = Code(.corrupt)
        /// The caller passed a value the store cannot keep (too long, empty key).
        public static let invalidInput = Code(.invalidInput)
        /// The database's schema is newer than this build's: a newer release migrated it. Nothing is wrong with the
        /// data; this build must not write it.
        public static let newerSchema = Code(.newerSchema)
    }

    public let code: Code
    /// A short explanation; never a token, hash or key.
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public static let duplicate = StoreError(.duplicate, "")
    public static let notFound = StoreError(.notFound, "")
    public static let unavailable = StoreError(.unavailable, "")
    public static let corrupt = StoreError(.corrupt, "")
    public static let invalidInput = StoreError(.invalidInput, "")
    public static let newerSchema = StoreError(.newerSchema, "")
}
