public import AccountStore
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension SQLAccountStore {
    static let authorizationCodeColumns = """
        code_hash, client_id, redirect_uri, scope, code_challenge, nonce, user_id, browser_session_id, auth_time,
        created_at, expires_at, redeemed_at, issued_session_id
        """

    public func saveAuthorizationCode(_ code: AuthorizationCodeRecord) async throws(StoreError) {
        let hash = SQLValue.hex(code.codeHash)
        let userID = code.userID.description
        let browserSessionID = code.browserSessionID.description
        let authTime = try SQLValue.milliseconds(code.authTime)
        let createdAt = try SQLValue.milliseconds(code.createdAt)
        let expiresAt = try SQLValue.milliseconds(code.expiresAt)
        try await write("save an authorization code") { database in
            guard try await database.raw("SELECT id FROM users WHERE id = \(bind: userID)").first() != nil else {
                throw StoreError(.notFound, "save an authorization code: no such user")
            }
            try await database.raw(
                """
                INSERT INTO authorization_codes (
                    code_hash, client_id, redirect_uri, scope, code_challenge, nonce, user_id, browser_session_id,
                    auth_time, created_at, expires_at
                ) VALUES (
                    \(bind: hash), \(bind: code.clientID), \(bind: code.redirectURI), \(bind: code.scope),
                    \(bind: code.codeChallenge), \(bind: code.nonce), \(bind: userID), \(bind: browserSessionID),
                    \(bind: authTime), \(bind: createdAt), \(bind: expiresAt)
                )
                """
            ).run()
        }
    }

    public func authorizationCode(codeHash: [UInt8]) async throws(StoreError) -> AuthorizationCodeRecord? {
        let hash = SQLValue.hex(codeHash)
        return try await read("read an authorization code") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: Self.authorizationCodeColumns) FROM authorization_codes
                WHERE code_hash = \(bind: hash)
                """
            ).first().map(Self.authorizationCode)
        }
    }

    /// Redeems in one transaction: a conditional `UPDATE … WHERE redeemed_at IS NULL … RETURNING`, which at most one
    /// concurrent transaction can win, then the session's insert; only when it changed nothing does the store look at
    /// why (unknown, replayed, expired).
    public func redeemAuthorizationCode(
        codeHash: [UInt8],
        startingSession session: NewSession,
        now: Date
    ) async throws(StoreError) -> AuthorizationCodeOutcome {
        let hash = SQLValue.hex(codeHash)
        let sessionID = session.sessionID.description
        let tokenHash = SQLValue.hex(session.refreshTokenHash)
        let issuedAt = try SQLValue.milliseconds(session.issuedAt)
        let expiresAt = try SQLValue.milliseconds(session.expiresAt)
        let metadata = session.metadata
        let now = try SQLValue.milliseconds(now)
        return try await write("redeem an authorization code") { database in
            let claimed = try await database.raw(
                """
                UPDATE authorization_codes SET redeemed_at = \(bind: now), issued_session_id = \(bind: sessionID)
                WHERE code_hash = \(bind: hash) AND redeemed_at IS NULL AND expires_at > \(bind: now)
                RETURNING \(unsafeRaw: Self.authorizationCodeColumns)
                """
            ).first()
            if let claimed {
                let code = try Self.authorizationCode(claimed)
                try await Self.insertSession(
                    database,
                    id: sessionID,
                    userID: code.userID.description,
                    now: now,
                    metadata: metadata,
                    firstToken: (tokenHash, issuedAt, expiresAt)
                )
                return AuthorizationCodeOutcome.redeemed(code)
            }
            guard
                let row = try await database.raw(
                    """
                    SELECT \(unsafeRaw: Self.authorizationCodeColumns) FROM authorization_codes
                    WHERE code_hash = \(bind: hash)
                    """
                ).first()
            else { return .notFound }
            let code = try Self.authorizationCode(row)
            guard code.redeemedAt != nil else { return .expired }
            var ended: SessionID?
            if let issued = code.issuedSessionID?.description {
                let revoked = try await database.raw(
                    """
                    UPDATE sessions SET revoked_at = \(bind: now)
                    WHERE id = \(bind: issued) AND revoked_at IS NULL
                    RETURNING id, channel
                    """
                ).first()
                if let revoked {
                    ended = code.issuedSessionID
                    try await SQLLifecycleEvents.append(
                        try SQLLifecycleEvents.ended(
                            [try SQLEndedSession(revoked)],
                            userID: code.userID.description,
                            by: .system,
                            reason: SessionEndReason.codeReplayed,
                            now: now
                        ),
                        to: database
                    )
                }
            }
            return .replayed(code, endedSession: ended)
        }
    }

    static func authorizationCode(_ row: any SQLRow) throws -> AuthorizationCodeRecord {
        AuthorizationCodeRecord(
            codeHash: try SQLValue.bytes(hex: row.decode(column: "code_hash", as: String.self)),
            clientID: try row.decode(column: "client_id", as: String.self),
            redirectURI: try row.decode(column: "redirect_uri", as: String.self),
            scope: try row.decode(column: "scope", as: String.self),
            codeChallenge: try row.decode(column: "code_challenge", as: String?.self),
            nonce: try row.decode(column: "nonce", as: String?.self),
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            browserSessionID: try SQLValue.sessionID(row.decode(column: "browser_session_id", as: String.self)),
            authTime: SQLValue.date(milliseconds: try row.decode(column: "auth_time", as: Int64.self)),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            expiresAt: SQLValue.date(milliseconds: try row.decode(column: "expires_at", as: Int64.self)),
            redeemedAt: try row.decode(column: "redeemed_at", as: Int64?.self).map(SQLValue.date(milliseconds:)),
            issuedSessionID: try row.decode(column: "issued_session_id", as: String?.self).map(SQLValue.sessionID)
        )
    }
}
