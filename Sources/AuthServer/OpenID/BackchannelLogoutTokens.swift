import AccountStore
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The logout tokens of OpenID Connect Back-Channel Logout 1.0 (§2.4), signed as the client's ID tokens are (RS256
/// unless it registered ES256) and typed `logout+jwt`: `iss`, `aud`, `iat`, `exp`, `jti` (the event's id, so that
/// a retried delivery is recognised), `events` with the back-channel logout member, `sub` (the siwa user id) and
/// `sid` (the relying party's session, as in its ID tokens), and never a `nonce`.
struct BackchannelLogoutTokens: LogoutTokenSigning {
    let issuer: AccessTokenIssuer
    let configuration: AuthServerConfiguration
    /// How long a logout token is valid after its `iat`: a relying party checks it at once.
    static let lifetime: Int64 = 120
    /// The `events` member that makes a JWT a logout token.
    static let eventName = "http://schemas.openid.net/event/backchannel-logout"

    func logoutToken(for event: LifecycleEvent, clientID: String, at time: Date) throws -> String {
        guard event.type == .sessionEnded, let session = event.data["session_id"]?.text else {
            throw AuthServerError(
                .internalServerError,
                AuthServerError.Code.internalError,
                "a logout token is made only for a session.ended event"
            )
        }
        let now = Int64(time.timeIntervalSince1970)
        let claims = Claims(
            iss: configuration.publicURL,
            aud: clientID,
            iat: now,
            exp: now + Self.lifetime,
            jti: event.id.lowercasedText,
            events: [Self.eventName: [:]],
            sub: event.userID.description,
            sid: session
        )
        let payload = try JSONAnswer.bytes(claims)
        switch configuration.openID.client(clientID)?.idTokenSigningAlgorithm ?? .rs256 {
        case .rs256: return try issuer.signRS256(payload, type: AccessTokenIssuer.logoutTokenType)
        case .es256: return try issuer.sign(payload, type: AccessTokenIssuer.logoutTokenType)
        }
    }

    /// A logout token's claims, all of them.
    struct Claims: Encodable {
        var iss: String
        var aud: String
        var iat: Int64
        var exp: Int64
        var jti: String
        var events: [String: [String: String]]
        var sub: String
        var sid: String
    }
}
