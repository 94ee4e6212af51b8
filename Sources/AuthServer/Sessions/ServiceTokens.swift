public import AccountStore
import AppleSignIn
import Crypto
import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The admin API's service tokens: credentials for scripts and other services, `siwa_at_` and 256 random bits in
/// base64url (the prefix lets secret scanners find a leaked one). The store keeps only their SHA-256; a presented
/// token is found by that hash, so no secret is ever compared byte by byte.
public struct ServiceTokens: Sendable {
    /// What every service token starts with.
    public static let prefix = "siwa_at_"
    /// The default lifetime of a new token, in days.
    public static let defaultLifetimeDays = 90
    /// The longest lifetime a token may have, in days.
    public static let maximumLifetimeDays = 365
    /// How long after the noted last use a token's use is noted again: one write a minute at most per token, not one
    /// per request.
    static let useNoteInterval: TimeInterval = 60

    let store: any AccountStore
    let clock: any WallClock

    /// Whether `token` has the form of a service token (which no access token of siwa's has).
    static func looksLikeServiceToken(_ token: String) -> Bool { token.hasPrefix(prefix) }

    /// The SHA-256 of a token's secret, as the store keys it.
    public static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Makes and stores a new token (recorded in the audit log as created by `actor`) and returns it with its secret,
    /// which exists nowhere else: print it once.
    /// - Parameters:
    ///   - name: Its name (``AdminToken/isValidName(_:)``), unique among the tokens not revoked.
    ///   - scope: `read` (GET routes) or `write` (every admin API route).
    ///   - lifetimeDays: 1 to ``maximumLifetimeDays``.
    ///   - actor: Who creates it (an operator, an admin).
    ///   - store: Where it is kept.
    ///   - now: The time of creation.
    /// - Throws: ``StoreError`` `invalidInput` for a bad name or lifetime, `duplicate` for a name in use.
    public static func create(
        name: String,
        scope: AdminTokenScope,
        lifetimeDays: Int,
        by actor: AuditActor,
        in store: any AccountStore,
        now: Date
    ) async throws(StoreError) -> (token: AdminToken, secret: String) {
        guard AdminToken.isValidName(name) else {
            throw StoreError(
                .invalidInput,
                "a token's name is 1 to \(AdminToken.maxNameLength) letters, digits, '.', '_' or '-'"
            )
        }
        guard (1...maximumLifetimeDays).contains(lifetimeDays) else {
            throw StoreError(.invalidInput, "a token lives 1 to \(maximumLifetimeDays) days")
        }
        let secret = prefix + WebAuthorization.randomToken(byteCount: 32)
        let token = AdminToken(
            name: name,
            scope: scope,
            createdAt: now,
            createdBy: actor,
            expiresAt: now.addingTimeInterval(TimeInterval(lifetimeDays) * 86_400)
        )
        try await store.createAdminToken(token, tokenHash: hash(secret))
        return (token, secret)
    }

    /// The active token whose secret is `secret`, if it may call a route that needs `scope`; its use is noted.
    /// - Throws: ``AuthServerError`` 401 `invalid_token` (unknown), `service_token_expired`, `service_token_revoked`;
    ///   403 `insufficient_scope` for a read token on a route that changes something.
    func authenticate(_ secret: String, needing scope: AdminTokenScope) async throws -> AdminToken {
        guard let token = try await store.adminToken(tokenHash: Self.hash(secret)) else {
            throw AuthServerError.unauthorized(AuthServerError.Code.invalidToken, "the service token is not known")
        }
        let now = clock.now
        if token.revokedAt != nil {
            throw AuthServerError.unauthorized(
                AuthServerError.Code.serviceTokenRevoked,
                "the service token '\(token.name)' has been revoked"
            )
        }
        guard now < token.expiresAt else {
            throw AuthServerError.unauthorized(
                AuthServerError.Code.serviceTokenExpired,
                "the service token '\(token.name)' has expired; create a new one (siwa admin tokens create)"
            )
        }
        guard token.scope.allows(scope) else {
            throw AuthServerError(
                .forbidden,
                AuthServerError.Code.insufficientScope,
                "the service token '\(token.name)' may only read; this route needs a token of scope write"
            )
        }
        if token.lastUsedAt.map({ now.timeIntervalSince($0) >= Self.useNoteInterval }) ?? true {
            // A failed note of use must not refuse a call the token may make: the store answered the lookup.
            try? await store.noteAdminTokenUse(token.id, at: now)
        }
        return token
    }
}

extension HTTPField.Name {
    /// Which credential acted on an admin API call: `token <name>` or `admin <subject>`.
    static let siwaActingCredential = HTTPField.Name("Siwa-Acting-Credential")!
}
