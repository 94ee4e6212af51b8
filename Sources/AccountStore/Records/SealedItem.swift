/// One blob the store keeps sealed with the data key, for re-sealing it under a new key (`siwa keys rotate-data-key`).
public struct SealedItem: Sendable, Hashable {
    /// Where a sealed blob lives. The order of the cases is the order ``AccountStore/sealedItems(after:limit:)``
    /// walks them in.
    public enum Kind: String, Sendable, Hashable, CaseIterable, Comparable {
        /// An access-token signing key; the id is its `kid`.
        case signingKey = "signing_key"
        /// A user's Apple refresh token; the id is the user's siwa id.
        case appleToken = "apple_token"
        /// A queued Apple revocation; the id is its id (a lower-case UUID).
        case appleRevocation = "apple_revocation"

        public static func < (lhs: Kind, rhs: Kind) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// Where an item is in the walk: its kind and id. Resuming after one position continues with the next item.
    public struct Position: Sendable, Hashable {
        public var kind: Kind
        public var id: String

        public init(kind: Kind, id: String) {
            self.kind = kind
            self.id = id
        }
    }

    public var kind: Kind
    public var id: String
    /// The sealed bytes, as stored.
    public var sealed: [UInt8]

    public init(kind: Kind, id: String, sealed: [UInt8]) {
        self.kind = kind
        self.id = id
        self.sealed = sealed
    }

    public var position: Position { Position(kind: kind, id: id) }
}
