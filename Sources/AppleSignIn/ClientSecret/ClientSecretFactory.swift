import Crypto
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Makes the client secret Apple's token and revoke endpoints require: an ES256 JWT with header `alg`, `kid` and
/// claims `iss` (team id), `iat`, `exp`, `aud` (`https://appleid.apple.com`), `sub` (the client id used).
///
/// A secret is made once per client id and reused until shortly before it expires (the last tenth of its
/// lifetime, at most an hour), so the hot path pays for one ECDSA signature per client id and lifetime. Safe to share.
public final class ClientSecretFactory: Sendable {
    /// A client secret and when it stops being valid.
    public struct Secret: Sendable, CustomStringConvertible {
        /// The JWT. - Warning: a credential; never log it.
        public let token: String
        public let expiresAt: Date
        public var description: String { "ClientSecret(expires: \(expiresAt), redacted)" }
    }

    private let credentials: ClientSecretCredentials
    private let lifetime: TimeInterval
    private let clock: any WallClock
    private let cache = Mutex<[ClientID: Secret]>([:])

    /// - Parameters:
    ///   - credentials: team id, key id and `.p8` key.
    ///   - lifetime: seconds each secret lives; at most Apple's 15,777,000.
    ///   - clock: the wall clock for `iat` and `exp`.
    public init(credentials: ClientSecretCredentials, lifetime: TimeInterval, clock: any WallClock = SystemWallClock())
    {
        self.credentials = credentials
        self.lifetime = min(lifetime, AppleSignInConfiguration.maximumClientSecretLifetime)
        self.clock = clock
    }

    /// The current secret for `clientID`, made anew when none is cached or the cached one is near its end.
    /// - Parameter clientID: the client id the secret is for (its `sub`): a bundle id or the Services ID.
    /// - Returns: a secret with more than a tenth of its lifetime (or an hour, if that is less) left to run.
    public func secret(for clientID: ClientID) -> Secret {
        let now = clock.now
        let renewalMargin = min(lifetime / 10, 3600)
        return cache.withLock { cache in
            if let cached = cache[clientID], cached.expiresAt.timeIntervalSince(now) > renewalMargin {
                return cached
            }
            let secret = makeSecret(for: clientID, now: now)
            cache[clientID] = secret
            return secret
        }
    }

    /// Signs a new secret without touching the cache (the CLI's `client-secret` and the benchmark use this).
    /// - Parameters:
    ///   - clientID: the client id the secret is for (its `sub`).
    ///   - now: the time of `iat`, rounded down to the second; `exp` is `iat` plus the lifetime.
    /// - Returns: the signed JWT and its expiry.
    public func makeSecret(for clientID: ClientID, now: Date) -> Secret {
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let expiresAt = issuedAt + Int64(lifetime)
        let header = JSONWriter.object(["alg": .string("ES256"), "kid": .string(credentials.keyID.rawValue)])
        let claims = JSONWriter.object([
            "iss": .string(credentials.teamID.rawValue),
            "iat": .integer(issuedAt),
            "exp": .integer(expiresAt),
            "aud": .string(AppleSignInConfiguration.appleIssuer),
            "sub": .string(clientID.rawValue),
        ])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        // ECDSA signing over P-256 cannot fail for a valid key; swift-crypto's API is throwing for other backends.
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try credentials.key.privateKey.signature(for: Array(signingInput.utf8))
        } catch {
            preconditionFailure("P-256 signing failed: \(error)")
        }
        return Secret(
            token: signingInput + "." + Base64URL.encode(signature.rawRepresentation),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
    }
}
