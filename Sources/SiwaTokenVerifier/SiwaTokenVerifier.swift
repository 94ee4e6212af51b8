import Crypto

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Verifies siwa's access tokens in another Swift service, from siwa's issuer URL alone: the keys come through
/// OpenID Connect discovery (`<issuer>/.well-known/openid-configuration`, then its `jwks_uri`), are cached, and are
/// fetched again when a token names a key the cache lacks (siwa rotated its key) or the cache is older than
/// `maximumKeyAge`.
///
/// A token is accepted when it is a compact JWS signed ES256 by one of the issuer's keys, `iss` is the issuer, `aud`
/// names `audience`, `exp` has not passed and `iat` (and `nbf`, if present) are not in the future, each within
/// `leeway`. No database, no network call per token.
///
/// ```swift
/// let verifier = SiwaTokenVerifier(
///     issuer: "https://auth.example.com",
///     audience: "siwa",
///     transport: AsyncHTTPClientKeyTransport()
/// )
/// let claims = try await verifier.verify(token)   // claims.subject is the siwa user id
/// ```
public struct SiwaTokenVerifier: Sendable {
    /// The issuer URL, exactly as siwa's tokens carry it in `iss` (siwa's public URL).
    public let issuer: String
    /// The audience tokens must name (`aud`): siwa's access-token audience (`SIWA_ACCESS_TOKEN_AUDIENCE`, `siwa` by
    /// default). siwa's own access tokens and those its OpenID provider issues to relying parties both carry it; tell
    /// them apart with ``SiwaTokenClaims/kind``. Never a client id: that is the audience of ID tokens, which are no
    /// access tokens and are refused.
    public let audience: String
    /// How far `exp`, `iat` and `nbf` may be off (clock skew between machines).
    public let leeway: TimeInterval
    private let keys: SiwaKeySet
    private let now: @Sendable () -> Date

    /// Makes a verifier for one issuer and audience; nothing is fetched until the first token needs a key.
    /// - Parameters:
    ///   - issuer: siwa's issuer URL (`https://auth.example.com`); its discovery document must name the same issuer.
    ///   - audience: the `aud` to require.
    ///   - transport: how the discovery document and the key set are fetched.
    ///   - leeway: allowed clock skew (60 s by default).
    ///   - maximumKeyAge: how long a fetched key set is used before it is fetched again (1 hour by default).
    ///   - minimumRefetchInterval: the least time between fetches for unknown `kid`s (10 s by default).
    ///   - fetchTimeout: the deadline of each fetch (10 s by default).
    ///   - now: the clock.
    public init(
        issuer: String,
        audience: String,
        transport: any SiwaKeyTransport,
        leeway: TimeInterval = 60,
        maximumKeyAge: TimeInterval = 3_600,
        minimumRefetchInterval: TimeInterval = 10,
        fetchTimeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.now = now
        self.keys = SiwaKeySet(
            issuer: issuer,
            transport: transport,
            timeout: fetchTimeout,
            minimumRefetchInterval: minimumRefetchInterval,
            maximumAge: maximumKeyAge
        )
    }

    /// Checks `token` and answers its claims.
    ///
    /// A token names its key by `kid`; a `kid` the cached key set lacks fetches the set again (at most once per
    /// `minimumRefetchInterval`), and a key already known keeps verifying while siwa cannot be reached.
    /// - Parameter token: the compact JWS, without the `Bearer ` prefix (at most 8,192 bytes).
    /// - Returns: the token's claims, with ``SiwaTokenClaims/kind`` telling a session token from a relying party's.
    /// - Throws: ``SiwaTokenError`` naming the check that failed (never echoing the token), or
    ///   ``SiwaTokenError/Code/keysUnavailable`` when siwa's keys could not be read.
    public func verify(_ token: String) async throws(SiwaTokenError) -> SiwaTokenClaims {
        guard token.utf8.count <= 8_192 else { throw SiwaTokenError(.malformed, "the token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = SiwaBase64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else { throw SiwaTokenError(.malformed, "not a compact JWS with a JSON header") }
        guard header.alg == "ES256" else {
            throw SiwaTokenError(.unsupportedAlgorithm, "alg '\(header.alg ?? "")' is not ES256")
        }
        guard let kid = header.kid, !kid.isEmpty else { throw SiwaTokenError(.malformed, "the header has no kid") }
        let time = now()
        let key = try await keys.key(kid, now: time)
        guard let signatureBytes = SiwaBase64URL.decode(parts[2]), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Array(token.utf8[..<parts[1].endIndex]))
        else { throw SiwaTokenError(.badSignature, "the signature does not verify with key '\(kid)'") }
        guard let payloadBytes = SiwaBase64URL.decode(parts[1]),
            let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes))
        else { throw SiwaTokenError(.malformed, "the payload is not a JSON object of JWT claims") }
        return try claims(payload, kind: try Self.kind(header: header, payload: payload), now: time)
    }

    /// The kind of access token: a relying party's is typed `at+jwt` (RFC 9068) and names its client; siwa's own is
    /// typed `JWT` and names none. Anything else (an ID token, whose `azp` names its client; a token whose type and
    /// claims disagree) is no access token of siwa's.
    private static func kind(header: Header, payload: Payload) throws(SiwaTokenError) -> SiwaTokenClaims.Kind {
        let type = header.typ?.lowercased()
        if type == "at+jwt" || type == "application/at+jwt" {
            guard payload.clientID != nil else {
                throw SiwaTokenError(.wrongTokenType, "an at+jwt access token must name its client_id")
            }
            return .relyingParty
        }
        guard type == nil || type == "jwt" else {
            throw SiwaTokenError(.wrongTokenType, "typ '\(header.typ ?? "")' is not an access token's")
        }
        guard payload.clientID == nil, payload.scope == nil, payload.azp == nil else {
            throw SiwaTokenError(
                .wrongTokenType,
                "an ID token, or an access token whose claims do not match its typ, is not an access token"
            )
        }
        return .session
    }

    private func claims(
        _ payload: Payload,
        kind: SiwaTokenClaims.Kind,
        now: Date
    ) throws(SiwaTokenError) -> SiwaTokenClaims {
        guard payload.iss == issuer else {
            throw SiwaTokenError(.wrongIssuer, "iss is '\(payload.iss ?? "")', not '\(issuer)'")
        }
        guard let audiences = payload.aud?.values else { throw SiwaTokenError(.missingClaim, "aud is missing") }
        guard audiences.contains(audience) else {
            throw SiwaTokenError(.wrongAudience, "aud does not name '\(audience)'")
        }
        guard let subject = payload.sub, !subject.isEmpty else { throw SiwaTokenError(.missingClaim, "sub is missing") }
        guard let exp = payload.exp else { throw SiwaTokenError(.missingClaim, "exp is missing") }
        guard let iat = payload.iat else { throw SiwaTokenError(.missingClaim, "iat is missing") }
        let seconds = now.timeIntervalSince1970
        guard exp + leeway > seconds else { throw SiwaTokenError(.expired, "the token expired") }
        guard iat - leeway <= seconds, (payload.nbf ?? 0) - leeway <= seconds else {
            throw SiwaTokenError(.notYetValid, "the token is not valid yet")
        }
        return SiwaTokenClaims(
            subject: subject,
            issuer: issuer,
            audiences: audiences,
            issuedAt: Date(timeIntervalSince1970: iat),
            expiresAt: Date(timeIntervalSince1970: exp),
            sessionID: payload.sid,
            tokenID: payload.jti,
            clientID: payload.clientID,
            scopes: payload.scope?.split(separator: " ").map(String.init) ?? [],
            kind: kind
        )
    }

    /// The JOSE header fields read.
    private struct Header: Decodable {
        var alg: String?
        var kid: String?
        var typ: String?
    }

    /// The claims read; a claim of the wrong JSON type fails the decoding (a malformed token).
    private struct Payload: Decodable {
        var iss: String?
        var aud: Audience?
        var sub: String?
        var exp: Double?
        var iat: Double?
        var nbf: Double?
        var sid: String?
        var jti: String?
        var clientID: String?
        var azp: String?
        var scope: String?

        enum CodingKeys: String, CodingKey {
            case iss, aud, sub, exp, iat, nbf, sid, jti, azp, scope
            case clientID = "client_id"
        }
    }

    /// `aud`: one string or an array of them (RFC 7519 §4.1.3).
    private struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                values = [one]
            } else {
                values = try container.decode([String].self)
            }
        }
    }
}
