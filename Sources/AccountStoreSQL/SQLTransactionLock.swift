/// A lock that serializes one kind of transaction across every process on one PostgreSQL database.
///
/// SQLite needs none: its `BEGIN IMMEDIATE` transactions already run one at a time.
enum SQLTransactionLock: Int32, Sendable {
    case migrations = 1
    case signingKeys = 2

    /// The first half of every siwa advisory lock key ("siwa" in ASCII), so that they do not collide with other
    /// applications' locks on a shared database.
    static let namespace: Int32 = 0x7369_7761
}
