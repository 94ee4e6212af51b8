public import AccountStore
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension SQLAccountStore {
    // MARK: Server nonces

    public func saveServerNonce(hash: [UInt8], expiresAt: Date) async throws(StoreError) {
        let hash = SQLValue.hex(hash)
        let expiresAt = try SQLValue.milliseconds(expiresAt)
        try await read("save a server nonce") { database in
            try await database.raw(
                "INSERT INTO server_nonces (hash, expires_at) VALUES (\(bind: hash), \(bind: expiresAt))"
            ).run()
        }
    }

    /// Deletes the nonce and answers whether it was still unexpired: one statement, so that of several concurrent
    /// consumers only one gets the row.
    public func consumeServerNonce(hash: [UInt8], now: Date) async throws(StoreError) -> Bool {
        let hash = SQLValue.hex(hash)
        let now = try SQLValue.milliseconds(now)
        return try await read("consume a server nonce") { database in
            let row = try await database.raw(
                "DELETE FROM server_nonces WHERE hash = \(bind: hash) RETURNING expires_at"
            ).first()
            guard let expiresAt = try row?.decode(column: "expires_at", as: Int64.self) else { return false }
            return expiresAt > now
        }
    }

    // MARK: Access-token signing keys

    /// Every signing key by `created_at` (then `kid`).
    public func signingKeys() async throws(StoreError) -> [SigningKeyRecord] {
        try await read("list signing keys") { database in
            try await database.raw(
                "SELECT \(unsafeRaw: SQLRecords.signingKeyColumns) FROM signing_keys ORDER BY created_at, kid"
            ).all().map(SQLRecords.signingKey)
        }
    }

    /// Retires the current key and inserts the new one in one transaction, under a PostgreSQL advisory lock so that
    /// two instances adding keys at once leave exactly one current key.
    public func addSigningKey(_ key: SigningKeyRecord) async throws(StoreError) {
        let kid = key.kid
        let sealed = SQLValue.base64(key.sealedPrivateKey)
        let createdAt = try SQLValue.milliseconds(key.createdAt)
        let retiredAt = try key.retiredAt.map { date throws(StoreError) in try SQLValue.milliseconds(date) }
        try await write("add a signing key", lock: .signingKeys) { database in
            try await database.raw(
                "UPDATE signing_keys SET retired_at = \(bind: createdAt) WHERE retired_at IS NULL"
            ).run()
            try await database.raw(
                """
                INSERT INTO signing_keys (kid, sealed_private_key, created_at, retired_at)
                VALUES (\(bind: kid), \(bind: sealed), \(bind: createdAt), \(bind: retiredAt))
                """
            ).run()
        }
    }

    // MARK: Health

    public func ping() async throws(StoreError) {
        try await read("ping") { database in try await database.raw("SELECT 1 AS one").run() }
    }
}
