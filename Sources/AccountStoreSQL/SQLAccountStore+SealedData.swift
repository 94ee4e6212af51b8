public import AccountStore
import SQLKit

extension SQLAccountStore {
    // MARK: Sealed data

    /// The table, id column and sealed column of each kind of sealed item.
    private static func columns(_ kind: SealedItem.Kind) -> (table: String, id: String, sealed: String) {
        switch kind {
        case .signingKey: ("signing_keys", "kid", "sealed_private_key")
        case .appleToken: ("apple_tokens", "user_id", "sealed_refresh_token")
        case .appleRevocation: ("apple_revocations", "id", "sealed_refresh_token")
        }
    }

    /// One query per kind, from the kind of `after` on, until `limit` items are found.
    public func sealedItems(after: SealedItem.Position?, limit: Int) async throws(StoreError) -> [SealedItem] {
        guard limit > 0 else { return [] }
        return try await read("list sealed data") { database in
            var items: [SealedItem] = []
            for kind in SealedItem.Kind.allCases where after.map({ kind >= $0.kind }) ?? true {
                let (table, id, sealed) = Self.columns(kind)
                let remaining = Int64(limit - items.count)
                let rows: [any SQLRow]
                if let after, after.kind == kind {
                    rows = try await database.raw(
                        """
                        SELECT \(ident: id) AS id, \(ident: sealed) AS sealed FROM \(ident: table)
                        WHERE \(ident: id) > \(bind: after.id) ORDER BY \(ident: id) LIMIT \(bind: remaining)
                        """
                    ).all()
                } else {
                    rows = try await database.raw(
                        """
                        SELECT \(ident: id) AS id, \(ident: sealed) AS sealed FROM \(ident: table)
                        ORDER BY \(ident: id) LIMIT \(bind: remaining)
                        """
                    ).all()
                }
                for row in rows {
                    items.append(
                        SealedItem(
                            kind: kind,
                            id: try row.decode(column: "id", as: String.self),
                            sealed: try SQLValue.bytes(base64: row.decode(column: "sealed", as: String.self))
                        )
                    )
                }
                if items.count >= limit { break }
            }
            return items
        }
    }

    /// One `UPDATE … WHERE id = ? AND sealed = ?`: the bytes are compared as stored, so that a row rewritten meanwhile
    /// is left alone.
    public func replaceSealed(_ item: SealedItem, with sealed: [UInt8]) async throws(StoreError) -> Bool {
        let (table, id, column) = Self.columns(item.kind)
        let itemID = item.id
        let expected = SQLValue.base64(item.sealed)
        let replacement = SQLValue.base64(sealed)
        return try await write("replace sealed data") { database in
            try await database.raw(
                """
                UPDATE \(ident: table) SET \(ident: column) = \(bind: replacement)
                WHERE \(ident: id) = \(bind: itemID) AND \(ident: column) = \(bind: expected)
                RETURNING \(ident: id) AS id
                """
            ).first() != nil
        }
    }
}
