import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads the store's records from result rows; the column lists its queries select.
enum SQLRecords {
    static let userColumns = """
        id, apple_user_id, client_id, email, email_verified, is_private_email, email_forwarding, given_name, \
        family_name, created_at, updated_at, apple_consent_revoked_at, disabled_at, last_sign_in_at
        """

    static let appleTokenColumns = "user_id, client_id, sealed_refresh_token, stored_at, last_validated_at"

    static let signingKeyColumns = "kid, sealed_private_key, created_at, retired_at"

    static func user(_ row: any SQLRow) throws -> UserRecord {
        UserRecord(
            id: try SQLValue.userID(row.decode(column: "id", as: String.self)),
            appleUserID: AppleUserID(try row.decode(column: "apple_user_id", as: String.self)),
            clientID: ClientID(try row.decode(column: "client_id", as: String.self)),
            email: try row.decode(column: "email", as: String?.self),
            emailVerified: try row.decode(column: "email_verified", as: Int64.self) != 0,
            isPrivateEmail: try row.decode(column: "is_private_email", as: Int64.self) != 0,
            emailForwarding: try row.decode(column: "email_forwarding", as: Int64.self) != 0,
            givenName: try row.decode(column: "given_name", as: String?.self),
            familyName: try row.decode(column: "family_name", as: String?.self),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            updatedAt: SQLValue.date(milliseconds: try row.decode(column: "updated_at", as: Int64.self)),
            appleConsentRevokedAt: try row.decode(column: "apple_consent_revoked_at", as: Int64?.self).map(
                SQLValue.date
            ),
            disabledAt: try row.decode(column: "disabled_at", as: Int64?.self).map(SQLValue.date),
            lastSignInAt: try row.decode(column: "last_sign_in_at", as: Int64?.self).map(SQLValue.date)
        )
    }

    static func appleToken(_ row: any SQLRow) throws -> AppleTokenRecord {
        AppleTokenRecord(
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            clientID: ClientID(try row.decode(column: "client_id", as: String.self)),
            encryptedRefreshToken: try SQLValue.bytes(
                base64: row.decode(column: "sealed_refresh_token", as: String.self)
            ),
            storedAt: SQLValue.date(milliseconds: try row.decode(column: "stored_at", as: Int64.self)),
            lastValidatedAt: try row.decode(column: "last_validated_at", as: Int64?.self).map(SQLValue.date)
        )
    }

    static func signingKey(_ row: any SQLRow) throws -> SigningKeyRecord {
        SigningKeyRecord(
            kid: try row.decode(column: "kid", as: String.self),
            sealedPrivateKey: try SQLValue.bytes(base64: row.decode(column: "sealed_private_key", as: String.self)),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            retiredAt: try row.decode(column: "retired_at", as: Int64?.self).map(SQLValue.date)
        )
    }

    static func revocation(_ row: any SQLRow) throws -> SessionRevocation {
        SessionRevocation(
            sessionID: try SQLValue.sessionID(row.decode(column: "id", as: String.self)),
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            revokedAt: SQLValue.date(milliseconds: try row.decode(column: "revoked_at", as: Int64.self))
        )
    }

    static let revocationQueueColumns = """
        id, user_id, client_id, sealed_refresh_token, created_at, attempts, next_attempt_at, last_error
        """

    static func pendingRevocation(_ row: any SQLRow) throws -> PendingAppleRevocation {
        guard let id = UUID(text: try row.decode(column: "id", as: String.self)) else {
            throw StoreError(.corrupt, "a stored revocation id is not a UUID")
        }
        return PendingAppleRevocation(
            id: id,
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            clientID: ClientID(try row.decode(column: "client_id", as: String.self)),
            encryptedRefreshToken: try SQLValue.bytes(
                base64: row.decode(column: "sealed_refresh_token", as: String.self)
            ),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            attempts: Int(try row.decode(column: "attempts", as: Int64.self)),
            nextAttemptAt: SQLValue.date(milliseconds: try row.decode(column: "next_attempt_at", as: Int64.self)),
            lastError: try row.decode(column: "last_error", as: String?.self)
        )
    }

    static let notificationColumns = "event_key, type, apple_user_id, user_id, event_time, received_at, outcome"

    static func notification(_ row: any SQLRow) throws -> AppleNotificationRecord {
        AppleNotificationRecord(
            eventKey: try row.decode(column: "event_key", as: String.self),
            type: try row.decode(column: "type", as: String.self),
            appleUserID: AppleUserID(try row.decode(column: "apple_user_id", as: String.self)),
            userID: try row.decode(column: "user_id", as: String?.self).map(SQLValue.userID),
            eventTime: SQLValue.date(milliseconds: try row.decode(column: "event_time", as: Int64.self)),
            receivedAt: SQLValue.date(milliseconds: try row.decode(column: "received_at", as: Int64.self)),
            outcome: try row.decode(column: "outcome", as: String.self)
        )
    }

    static func webFlowState(_ row: any SQLRow) throws -> WebFlowState {
        WebFlowState(
            stateHash: try SQLValue.bytes(hex: row.decode(column: "state_hash", as: String.self)),
            nonce: try row.decode(column: "nonce", as: String.self),
            returnURL: try row.decode(column: "return_url", as: String.self),
            createdAt: SQLValue.date(milliseconds: try row.decode(column: "created_at", as: Int64.self)),
            expiresAt: SQLValue.date(milliseconds: try row.decode(column: "expires_at", as: Int64.self))
        )
    }
}
