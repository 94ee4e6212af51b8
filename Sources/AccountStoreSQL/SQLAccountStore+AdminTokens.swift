public import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

// Closures passed to `read`/`write` call only untyped-throwing functions (see SQLAccountStore+Lifecycle.swift).

/// The admin API's service tokens (`admin_tokens`, schema version 11): the SHA-256 of each secret as the key of its
/// lookup, and a unique index on the names of the tokens not revoked.
extension SQLAccountStore {
    private static let adminTokenColumns =
        "id, name, scope, created_at, created_by, created_by_subject, expires_at, last_used_at, revoked_at"

    public func createAdminToken(_ token: AdminToken, tokenHash: [UInt8]) async throws(StoreError) {
        let createdAt = try SQLValue.milliseconds(token.createdAt)
        let expiresAt = try SQLValue.milliseconds(token.expiresAt)
        let event = token.auditEvent(.adminTokenCreated, by: token.createdBy, now: token.createdAt)
        try await write("create a service token") { database in
            try await database.raw(
                """
                INSERT INTO admin_tokens (
                    token_hash, id, name, scope, created_at, created_by, created_by_subject, expires_at
                )
                VALUES (
                    \(bind: SQLValue.hex(tokenHash)), \(bind: token.id.lowercasedText), \(bind: token.name),
                    \(bind: token.scope.rawValue), \(bind: createdAt), \(bind: token.createdBy.kind),
                    \(bind: token.createdBy.storedSubject), \(bind: expiresAt)
                )
                """
            ).run()
            try await database.raw(SQLAuditLog.insert(event)).run()
        }
    }

    public func adminToken(tokenHash: [UInt8]) async throws(StoreError) -> AdminToken? {
        try await read("find a service token") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: Self.adminTokenColumns) FROM admin_tokens
                WHERE token_hash = \(bind: SQLValue.hex(tokenHash))
                """
            ).first().map(Self.adminToken)
        }
    }

    public func adminTokens() async throws(StoreError) -> [AdminToken] {
        let tokens = try await read("list service tokens") { database in
            try await database.raw("SELECT \(unsafeRaw: Self.adminTokenColumns) FROM admin_tokens").all()
                .map(Self.adminToken)
        }
        return tokens.sorted { ($0.createdAt, $0.name) < ($1.createdAt, $1.name) }
    }

    public func revokeAdminToken(
        named name: String,
        by actor: AuditActor,
        now: Date
    ) async throws(StoreError) -> AdminToken? {
        let revokedAt = try SQLValue.milliseconds(now)
        return try await write("revoke a service token") { database in
            let row = try await database.raw(
                """
                UPDATE admin_tokens SET revoked_at = \(bind: revokedAt)
                WHERE name = \(bind: name) AND revoked_at IS NULL
                RETURNING \(unsafeRaw: Self.adminTokenColumns)
                """
            ).first()
            guard let row else { return nil }
            let token = try Self.adminToken(row)
            try await database.raw(SQLAuditLog.insert(token.auditEvent(.adminTokenRevoked, by: actor, now: now))).run()
            return token
        }
    }

    public func noteAdminTokenUse(_ id: UUID, at time: Date) async throws(StoreError) {
        let usedAt = try SQLValue.milliseconds(time)
        try await write("note a service token's use") { database in
            try await database.raw(
                "UPDATE admin_tokens SET last_used_at = \(bind: usedAt) WHERE id = \(bind: id.lowercasedText)"
            ).run()
        }
    }

    private static func adminToken(_ row: any SQLRow) throws -> AdminToken {
        guard let id = UUID(uuidString: try row.decode(column: "id", as: String.self)),
            let scope = AdminTokenScope(rawValue: try row.decode(column: "scope", as: String.self)),
            let createdBy = AuditActor(
                kind: try row.decode(column: "created_by", as: String.self),
                subject: try row.decode(column: "created_by_subject", as: String?.self)
            )
        else { throw StoreError(.corrupt, "a stored service token cannot be read") }
        return AdminToken(
            id: id,
            name: try row.decode(column: "name", as: String.self),
            scope: scope,
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            createdBy: createdBy,
            expiresAt: SQLValue.date(milliseconds: try row.decode(column: "expires_at", as: Int64.self)),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self).map(SQLValue.date(milliseconds:)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(SQLValue.date(milliseconds:))
        )
    }
}
