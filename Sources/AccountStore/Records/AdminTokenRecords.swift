#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What a service token may do on the admin API: read (`GET` routes) or also act (the routes that change accounts).
public enum AdminTokenScope: String, Sendable, Hashable, CaseIterable, Codable {
    case read
    case write

    /// Whether a token of this scope may call a route that needs `needed`.
    public func allows(_ needed: AdminTokenScope) -> Bool { self == .write || needed == .read }
}

/// A service token of the admin API: a credential for scripts and other services, named, scoped and expiring. The
/// store keeps only the SHA-256 of its secret (``AccountStore/createAdminToken(_:tokenHash:)``).
public struct AdminToken: Sendable, Hashable {
    /// The most characters a name has.
    public static let maxNameLength = 64

    public var id: UUID
    /// Unique among the tokens not revoked; the audit log names the token by it.
    public var name: String
    public var scope: AdminTokenScope
    public var createdAt: Date
    /// An operator at the command line, or an admin.
    public var createdBy: AuditActor
    public var expiresAt: Date
    /// When it was last presented (noted at most about once a minute).
    public var lastUsedAt: Date?
    public var revokedAt: Date?

    public init(
        id: UUID = UUID(),
        name: String,
        scope: AdminTokenScope,
        createdAt: Date,
        createdBy: AuditActor,
        expiresAt: Date,
        lastUsedAt: Date? = nil,
        revokedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.scope = scope
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }

    /// Whether `text` may name a token: 1 to ``maxNameLength`` ASCII letters, digits, `.`, `_` or `-`.
    public static func isValidName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxNameLength
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2E || byte == 0x5F || byte == 0x2D
            }
    }

    /// Whether the token is neither revoked nor expired at `now`.
    public func isActive(at now: Date) -> Bool { revokedAt == nil && now < expiresAt }

    /// The event ``AccountStore/createAdminToken(_:tokenHash:)`` and ``AccountStore/revokeAdminToken(named:by:now:)``
    /// record: never the secret or its hash.
    public func auditEvent(_ type: AuditEventType, by actor: AuditActor, now: Date) -> AuditEvent {
        AuditEvent(
            time: now,
            type: type,
            actor: actor,
            details: [
                "token": name, "scope": scope.rawValue,
                "expires": String(expiresAt.storedMilliseconds / 1_000),
            ]
        )
    }
}
