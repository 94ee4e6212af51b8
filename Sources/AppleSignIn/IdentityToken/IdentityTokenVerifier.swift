import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Verifies Apple identity tokens and server-to-server notifications.
///
/// Checks, in order: structure, `alg` (RS256 only), key by `kid` (refetching Apple's keys once on an unknown `kid`),
/// signature, `iss`, `aud` (one of the configured client ids), `exp` and `iat` within the leeway, and the nonce when
/// one is expected. Each failure throws ``AppleSignInError`` with its own code.
public struct IdentityTokenVerifier: Sendable {
    public let configuration: AppleSignInConfiguration
    public let keys: AppleKeyCache
    let clock: any WallClock

    /// - Parameters:
    ///   - configuration: the allowed client ids, leeway and issuer options.
    ///   - keys: Apple's key set.
    ///   - clock: the wall clock for `exp` and `iat`.
    public init(configuration: AppleSignInConfiguration, keys: AppleKeyCache, clock: any WallClock = SystemWallClock())
    {
        self.configuration = configuration
        self.keys = keys
        self.clock = clock
    }

    /// Verifies an identity token.
    /// - Parameters:
    ///   - token: the JWT (`identityToken` of the native credential, `id_token` of the web callback).
    ///   - expectedNonce: the nonce the caller gave Apple, raw; the token's `nonce` must equal it or its SHA-256 hex.
    ///     `nil` when the flow uses no nonce.
    /// - Returns: the verified claims.
    /// - Throws: ``AppleSignInError`` naming the check that failed.
    /// - Warning: without `expectedNonce`, a captured token can be replayed until it expires.
    public func verify(_ token: String, expectedNonce: String? = nil) async throws(AppleSignInError) -> IdentityToken {
        let progress = try await AppleJWTCheck.verify(
            token,
            AppleJWTCheck.identityTokenChecks,
            context: checkContext(describes: false, expectedNonce: expectedNonce)
        )
        guard let identityToken = progress.identityToken else { throw .malformed("the token was not fully checked") }
        return identityToken
    }

    /// The names of the checks of an identity token, or of a notification, as ``inspect(_:expectedNonce:)`` reports
    /// them.
    public static var identityTokenCheckNames: [String] { AppleJWTCheck.identityTokenChecks.map(\.name) }
    public static var notificationCheckNames: [String] { AppleJWTCheck.notificationChecks.map(\.name) }

    func checkContext(describes: Bool, expectedNonce: String? = nil) -> AppleJWTCheck.Context {
        AppleJWTCheck.Context(
            keys: keys,
            configuration: configuration,
            now: clock.now,
            describes: describes,
            expectedNonce: expectedNonce
        )
    }

    static func checkNonce(
        _ token: IdentityToken,
        expected: String,
        configuration: AppleSignInConfiguration
    ) throws(AppleSignInError) {
        guard let nonce = token.nonce else {
            if token.nonceSupported == false && configuration.acceptsMissingNonceOnUnsupportedPlatforms { return }
            throw AppleSignInError(.nonceMissing, "a nonce was expected but the token carries none")
        }
        guard NonceForms.matches(claim: nonce, raw: expected) else {
            throw AppleSignInError(.nonceMismatch, "the token's nonce matches neither the nonce nor its SHA-256 hex")
        }
    }
}

extension IdentityToken {
    /// Reads the typed claims of a verified JWT.
    init(claims jwt: SignedAppleJWT) throws(AppleSignInError) {
        let claims = jwt.claims
        guard let sub = claims["sub"]?.stringValue, !sub.isEmpty else { throw .malformed("claim 'sub' is missing") }
        self.init(
            iss: jwt.issuer,
            sub: AppleUserID(sub),
            aud: jwt.audience,
            issuedAt: jwt.issuedAt,
            expiresAt: jwt.expiresAt
        )
        self.email = try claims.optionalString("email")
        self.emailVerified = try claims.optionalBool("email_verified")
        self.isPrivateEmail = try claims.optionalBool("is_private_email")
        self.nonce = try claims.optionalString("nonce")
        self.nonceSupported = try claims.optionalBool("nonce_supported")
        self.transferSub = try claims.optionalString("transfer_sub").map(AppleUserID.init)
        self.orgId = try claims.optionalString("org_id")
        self.cHash = try claims.optionalString("c_hash")
        self.atHash = try claims.optionalString("at_hash")
        if let status = claims["real_user_status"] {
            guard let value = status.int64Value, let int = Int(exactly: value) else {
                throw .malformed("claim 'real_user_status' is not an integer")
            }
            self.realUserStatus = RealUserStatus(rawValue: int)
        }
        if let authTime = claims["auth_time"] {
            guard let seconds = authTime.doubleValue, seconds.isFinite else {
                throw .malformed("claim 'auth_time' is not a number")
            }
            self.authTime = Date(timeIntervalSince1970: seconds)
        }
    }
}

/// A JSON object's members by name: a ``JSONValue`` tree, or a token's claims read as a ``JSONObjectView``.
protocol JSONMembers {
    subscript(_ name: String) -> JSONValue? { get }
}

extension JSONValue: JSONMembers {}
extension JSONObjectView: JSONMembers {}

extension JSONMembers {
    /// A claim that, when present and not null, must be a string.
    func optionalString(_ name: String) throws(AppleSignInError) -> String? {
        switch self[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .malformed("claim '\(name)' is not a string")
        }
    }

    /// A claim that, when present and not null, must be a boolean or the string "true"/"false".
    func optionalBool(_ name: String) throws(AppleSignInError) -> Bool? {
        switch self[name] {
        case nil, .null?: return nil
        case let value?:
            guard let bool = value.lenientBoolValue else { throw .malformed("claim '\(name)' is not a boolean") }
            return bool
        }
    }
}

/// Compares two strings' UTF-8 bytes in time that depends only on their lengths.
package func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    var lhs = lhs
    var rhs = rhs
    return lhs.withUTF8 { left in
        rhs.withUTF8 { right in
            guard left.count == right.count else { return false }
            var difference: UInt8 = 0
            for index in 0..<left.count { difference |= left[index] ^ right[index] }
            return difference == 0
        }
    }
}
