import AccountStore
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Signs the logout tokens of OpenID Connect Back-Channel Logout 1.0 with the OpenID provider's keys.
protocol LogoutTokenSigning: Sendable {
    /// The logout token telling the relying party `clientID` that the session of a `session.ended` event ended.
    /// - Parameters:
    ///   - event: the `session.ended` event; its id is the token's `jti`, the same on every attempt.
    ///   - clientID: the relying party (`aud`).
    ///   - time: the attempt's time (`iat`).
    /// - Returns: the signed JWT.
    /// - Throws: when the event names no session or user, or signing fails.
    func logoutToken(for event: LifecycleEvent, clientID: String, at time: Date) throws -> String
}

/// One back-channel logout request (§2.5): a form POST of `logout_token`.
enum BackchannelLogoutMessage {
    static func request(token: String) -> (body: [UInt8], headers: HTTPFields) {
        // A JWT is base64url and dots: nothing in it needs percent-encoding.
        let body = Array(("logout_token=" + token).utf8)
        let headers: HTTPFields = [
            .contentType: "application/x-www-form-urlencoded", .userAgent: "siwa/\(SiwaVersion.current)",
        ]
        return (body, headers)
    }
}
