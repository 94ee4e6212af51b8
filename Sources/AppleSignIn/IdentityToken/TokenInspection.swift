#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Every check of an identity token or notification payload run one by one, for people debugging a token
/// (`siwa verify`): unlike ``IdentityTokenVerifier/verify(_:expectedNonce:)``, it does not stop at the first failure.
public struct TokenInspection: Sendable {
    /// One check and how it went.
    public struct Check: Sendable {
        /// `structure`, `algorithm`, `key`, `signature`, `claims`, `issuer`, `audience`, `expiry`, `issued-at`,
        /// `nonce`, `event`.
        public let name: String
        /// What passed (a short detail), or the error that failed it.
        public let outcome: Result<String, AppleSignInError>

        public var passed: Bool {
            if case .success = outcome { return true }
            return false
        }
    }

    /// The header's JSON as sent, when it decoded.
    public let headerJSON: String?
    /// The claims' JSON as sent, when they decoded.
    public let claimsJSON: String?
    /// Whether the payload is a server-to-server notification (it has an `events` claim).
    public let isNotification: Bool
    /// The checks in order.
    public let checks: [Check]

    /// Whether every check passed.
    public var passed: Bool { checks.allSatisfy(\.passed) }
}

extension IdentityTokenVerifier {
    /// Runs every check on `token` separately and reports each.
    /// - Parameters:
    ///   - token: an identity token or the `payload` of a notification.
    ///   - expectedNonce: the raw nonce to compare, if any.
    public func inspect(_ token: String, expectedNonce: String? = nil) async -> TokenInspection {
        var checks: [TokenInspection.Check] = []
        func record(_ name: String, _ body: () throws(AppleSignInError) -> String) {
            do {
                checks.append(.init(name: name, outcome: .success(try body())))
            } catch {
                checks.append(.init(name: name, outcome: .failure(error)))
            }
        }
        let parts: SignedAppleJWT.Parts
        do {
            parts = try SignedAppleJWT.decode(token)
            checks.append(.init(name: "structure", outcome: .success("three base64url parts, JSON header")))
        } catch {
            checks.append(.init(name: "structure", outcome: .failure(error)))
            return TokenInspection(headerJSON: nil, claimsJSON: nil, isNotification: false, checks: checks)
        }
        record("algorithm") { () throws(AppleSignInError) in
            try SignedAppleJWT.checkAlgorithm(parts)
            return "RS256"
        }
        var key: AppleSigningKey?
        do {
            let kid = try SignedAppleJWT.keyID(parts)
            key = try await keys.key(for: kid)
            checks.append(.init(name: "key", outcome: .success("kid '\(kid)' is in Apple's key set")))
        } catch {
            checks.append(.init(name: "key", outcome: .failure(error)))
        }
        record("signature") { () throws(AppleSignInError) in
            guard let key else { throw AppleSignInError(.unknownKey, "not checked: no key to check it with") }
            try SignedAppleJWT.checkSignature(parts, key: key)
            return "RS256 signature verifies with '\(key.keyID)'"
        }
        let claimsJSON = String(decoding: parts.payload, as: UTF8.self)
        let claims: JSONValue
        do {
            claims = try SignedAppleJWT.decodeClaims(parts)
        } catch {
            checks.append(.init(name: "claims", outcome: .failure(error)))
            return TokenInspection(
                headerJSON: String(decoding: parts.headerBytes, as: UTF8.self),
                claimsJSON: claimsJSON,
                isNotification: false,
                checks: checks
            )
        }
        let now = clock.now
        record("issuer") { () throws(AppleSignInError) in
            try SignedAppleJWT.checkIssuer(claims, configuration: configuration)
        }
        record("audience") { () throws(AppleSignInError) in
            try SignedAppleJWT.matchAudience(claims["aud"], allowed: configuration.allowedClientIDs).rawValue
        }
        record("expiry") { () throws(AppleSignInError) in
            let expiresAt = try SignedAppleJWT.checkExpiry(claims, now: now, leeway: configuration.clockLeeway)
            return "expires \(SignedAppleJWT.wholeSeconds(expiresAt.timeIntervalSince(now))) s from now"
        }
        record("issued-at") { () throws(AppleSignInError) in
            let issuedAt = try SignedAppleJWT.checkIssuedAt(claims, now: now, leeway: configuration.clockLeeway)
            return "issued \(SignedAppleJWT.wholeSeconds(now.timeIntervalSince(issuedAt))) s ago"
        }
        let isNotification = claims["events"] != nil
        if isNotification {
            record("event") { () throws(AppleSignInError) in
                let event = try ServerNotificationEvent(eventsClaim: claims["events"])
                return "\(event.type) for \(event.sub)"
            }
        } else {
            record("claims") { () throws(AppleSignInError) in
                let jwt = SignedAppleJWT(
                    claims: claims,
                    audience: ClientID(""),
                    issuer: "",
                    issuedAt: now,
                    expiresAt: now
                )
                let token = try IdentityToken(claims: jwt)
                if let expectedNonce { try checkNonce(token, expected: expectedNonce) }
                return expectedNonce == nil ? "typed claims decode" : "typed claims decode; nonce matches"
            }
        }
        return TokenInspection(
            headerJSON: String(decoding: parts.headerBytes, as: UTF8.self),
            claimsJSON: claimsJSON,
            isNotification: isNotification,
            checks: checks
        )
    }
}
