public import AccountStore
import SQLKit

extension SQLAccountStore {
    public func clientConsent(
        userID: UserID,
        clientID: String,
        redirectURI: String
    ) async throws(StoreError) -> ClientConsentRecord? {
        let user = userID.description
        return try await read("read a client consent") { database in
            guard
                let row = try await database.raw(
                    """
                    SELECT scope, granted_at FROM client_redirect_consents
                    WHERE user_id = \(bind: user) AND client_id = \(bind: clientID)
                        AND redirect_uri = \(bind: redirectURI)
                    """
                ).first()
            else { return nil }
            return ClientConsentRecord(
                userID: userID,
                clientID: clientID,
                redirectURI: redirectURI,
                scope: try row.decode(column: "scope", as: String.self),
                grantedAt: SQLValue.date(milliseconds: try row.decode(column: "granted_at", as: Int64.self))
            )
        }
    }

    public func saveClientConsent(_ consent: ClientConsentRecord) async throws(StoreError) {
        let user = consent.userID.description
        let grantedAt = try SQLValue.milliseconds(consent.grantedAt)
        try await write("save a client consent") { database in
            guard try await database.raw("SELECT id FROM users WHERE id = \(bind: user)").first() != nil else {
                throw StoreError(.notFound, "save a client consent: no such user")
            }
            try await database.raw(
                """
                INSERT INTO client_redirect_consents (user_id, client_id, redirect_uri, scope, granted_at)
                VALUES (
                    \(bind: user), \(bind: consent.clientID), \(bind: consent.redirectURI), \(bind: consent.scope),
                    \(bind: grantedAt)
                )
                ON CONFLICT (user_id, client_id, redirect_uri)
                DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at
                """
            ).run()
        }
    }
}
