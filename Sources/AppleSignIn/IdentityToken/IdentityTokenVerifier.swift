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
    /// The claims ``init(claims:)`` reads, in the order it reads them (and so reports the first bad one).
    private enum Claim: Int, CaseIterable {
        case sub, email, emailVerified, isPrivateEmail, nonce, nonceSupported, transferSub, orgID, cHash, atHash
        case realUserStatus, authTime

        static let names = JSONObjectView.Names(allCases.map(\.name))

        var name: String {
            switch self {
            case .sub: "sub"
            case .email: "email"
            case .emailVerified: "email_verified"
            case .isPrivateEmail: "is_private_email"
            case .nonce: "nonce"
            case .nonceSupported: "nonce_supported"
            case .transferSub: "transfer_sub"
            case .orgID: "org_id"
            case .cHash: "c_hash"
            case .atHash: "at_hash"
            case .realUserStatus: "real_user_status"
            case .authTime: "auth_time"
            }
        }
    }

    /// Reads the typed claims of a verified JWT: where each claim is, found in one walk over the claims' members (a
    /// lookup per claim walked them a dozen times); plain strings, literal booleans and small integers read where
    /// they are; any other value read as a lookup by name reads it, by the same rules (``JSONValue/optionalString(_:)``, ``JSONValue/optionalBool(_:)``).
    init(claims jwt: SignedAppleJWT) throws(AppleSignInError) {
        let claims = jwt.claims
        let found = claims.members(named: Claim.names)
        let at = { (claim: Claim) in found[claim.rawValue] }
        guard let index = at(.sub),
            let sub = claims.plainString(at: index) ?? claims.value(at: index)?.stringValue, !sub.isEmpty
        else { throw .malformed("claim 'sub' is missing") }
        let email = try claims.optionalString(at: at(.email), Claim.email.name)
        let emailVerified = try claims.optionalBool(at: at(.emailVerified), Claim.emailVerified.name)
        let isPrivateEmail = try claims.optionalBool(at: at(.isPrivateEmail), Claim.isPrivateEmail.name)
        let nonce = try claims.optionalString(at: at(.nonce), Claim.nonce.name)
        let nonceSupported = try claims.optionalBool(at: at(.nonceSupported), Claim.nonceSupported.name)
        let transferSub = try claims.optionalString(at: at(.transferSub), Claim.transferSub.name)
        let orgID = try claims.optionalString(at: at(.orgID), Claim.orgID.name)
        let cHash = try claims.optionalString(at: at(.cHash), Claim.cHash.name)
        let atHash = try claims.optionalString(at: at(.atHash), Claim.atHash.name)
        var realUserStatus: RealUserStatus?
        if let index = at(.realUserStatus) {
            if let value = claims.smallInteger(at: index), let int = Int(exactly: value) {
                realUserStatus = RealUserStatus(rawValue: int)
            } else {
                guard let value = claims.value(at: index)?.int64Value, let int = Int(exactly: value) else {
                    throw .malformed("claim 'real_user_status' is not an integer")
                }
                realUserStatus = RealUserStatus(rawValue: int)
            }
        }
        var authTime: Date?
        if let index = at(.authTime) {
            guard
                let seconds = claims.smallInteger(at: index).map(Double.init) ?? claims.value(at: index)?.doubleValue,
                seconds.isFinite
            else {
                throw .malformed("claim 'auth_time' is not a number")
            }
            authTime = Date(timeIntervalSince1970: seconds)
        }
        // Made once, whole: assigning the claims one by one to a token made first copied it through its value
        // witnesses.
        self.init(
            iss: jwt.issuer,
            sub: AppleUserID(sub),
            aud: jwt.audience,
            issuedAt: jwt.issuedAt,
            expiresAt: jwt.expiresAt,
            email: email,
            emailVerified: emailVerified,
            isPrivateEmail: isPrivateEmail,
            realUserStatus: realUserStatus,
            nonce: nonce,
            nonceSupported: nonceSupported,
            authTime: authTime,
            transferSub: transferSub.map(AppleUserID.init),
            orgId: orgID,
            cHash: cHash,
            atHash: atHash
        )
    }
}

extension JSONObjectView {
    /// ``JSONValue/optionalString(_:)`` for the member at `index` (nil: absent), named `name`; a plain string read
    /// where it is.
    fileprivate func optionalString(at index: Int?, _ name: String) throws(AppleSignInError) -> String? {
        guard let index else { return nil }
        if let text = plainString(at: index) { return text }
        return try value(at: index).claimString(name)
    }

    /// ``JSONValue/optionalBool(_:)`` for the member at `index` (nil: absent), named `name`; a literal `true` or
    /// `false` read where it is.
    fileprivate func optionalBool(at index: Int?, _ name: String) throws(AppleSignInError) -> Bool? {
        guard let index else { return nil }
        if let bool = literalBool(at: index) { return bool }
        return try value(at: index).claimBool(name)
    }
}

extension JSONValue {
    /// The member `name` of an object, as a claim that, when present and not null, must be a string.
    func optionalString(_ name: String) throws(AppleSignInError) -> String? {
        try self[name].claimString(name)
    }

    /// The member `name` of an object, as a claim that, when present and not null, must be a boolean or the string
    /// "true"/"false".
    func optionalBool(_ name: String) throws(AppleSignInError) -> Bool? {
        try self[name].claimBool(name)
    }
}

extension JSONValue? {
    /// The rule of ``JSONValue/optionalString(_:)`` for the claim `name`'s value, or nil for an absent claim.
    func claimString(_ name: String) throws(AppleSignInError) -> String? {
        switch self {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .malformed("claim '\(name)' is not a string")
        }
    }

    /// The rule of ``JSONValue/optionalBool(_:)`` for the claim `name`'s value, or nil for an absent claim.
    func claimBool(_ name: String) throws(AppleSignInError) -> Bool? {
        switch self {
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
