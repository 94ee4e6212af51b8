public import AccountStore
public import AppleSignIn
import Crypto
import CryptoExtras
import Dispatch
import HTTPTypes
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Signs and verifies siwa's access tokens: ES256 JWTs with `kid`, `iss`, `aud`, `sub`, `sid`, `iat`, `exp`, `jti`.
///
/// Keys live in the store (sealed with the data key), so every instance signs with the same current key and verifies
/// every key still in use; they are reloaded with the revocation list. Verification reads no database: a bounded
/// cache of verified tokens makes a repeated token a dictionary lookup instead of an ECDSA check.
///
/// Each stored key also holds an RSA key (2048 bits, `kid` with the suffix ``rsaKidSuffix``), which rotates with it:
/// the OpenID provider signs ID tokens RS256 with it, as OpenID Connect requires of a provider and a client that
/// registers nothing expects. Access tokens are always ES256.
public final class AccessTokenIssuer: Sendable {
    /// One stored key: the P-256 key and, for keys stored since ID tokens are signed RS256, its RSA companion.
    private struct OpenedKey {
        var ec: P256.Signing.PrivateKey
        var rsa: _RSA.Signing.PrivateKey?
        /// Its public keys as the key set publishes them, written once when the key is opened.
        var publicJWKs: [String] = []
    }

    private struct Keys {
        var currentKid: String
        var signing: P256.Signing.PrivateKey
        /// The current key's RSA companion (`nil` only until a key that has one is stored).
        var rsaSigning: _RSA.Signing.PrivateKey?
        /// Every opened private key by kid: a kid never changes its key, so reloads open only new ones.
        var opened: [String: OpenedKey]
        var verifying: [String: P256.Signing.PublicKey]
        /// RSA public keys by their own kid (`<kid>` + ``AccessTokenIssuer/rsaKidSuffix``).
        var rsaVerifying: [String: _RSA.Signing.PublicKey]
        /// kid → retiredAt, to publish keys only while their tokens may live.
        var retiredAt: [String: Date]
    }

    /// Appended to a stored key's `kid` to name its RSA companion.
    static let rsaKidSuffix = ".rs"

    private let configuration: AuthServerConfiguration
    private let store: any AccountStore
    private let sealer: DataSealer
    private let clock: any WallClock
    private let keys: Mutex<Keys>
    private let cache = Mutex<[String: VerifiedAccessToken]>([:])
    private static let cacheLimit = 10_000

    /// Loads the signing keys from the store, creating the first one if there is none, or a new one when the current
    /// key was stored before keys had an RSA companion.
    public init(
        configuration: AuthServerConfiguration,
        store: any AccountStore,
        sealer: DataSealer,
        clock: any WallClock
    ) async throws {
        self.configuration = configuration
        self.store = store
        self.sealer = sealer
        self.clock = clock
        var loaded = try await Self.load(store: store, sealer: sealer)
        if loaded == nil || loaded?.rsaSigning == nil {
            do {
                try await Self.addKey(store: store, sealer: sealer, now: clock.now)
            } catch let error as StoreError where error.code == .duplicate {
                // Another instance created one at the same moment.
            }
            loaded = try await Self.load(store: store, sealer: sealer)
        }
        guard let loaded else {
            throw AuthServerError(.internalServerError, AuthServerError.Code.internalError, "no signing key")
        }
        self.keys = Mutex(loaded)
    }

    /// Adds a new current key; the old one keeps verifying (`siwa keys rotate`).
    public func rotate() async throws {
        try await Self.addKey(store: store, sealer: sealer, now: clock.now)
        try await reload()
    }

    /// Re-reads the keys from the store (another instance may have rotated).
    public func reload() async throws {
        let known = keys.withLock { $0.opened }
        if let loaded = try await Self.load(store: store, sealer: sealer, known: known) {
            keys.withLock { $0 = loaded }
        }
    }

    /// Stores a new key: the P-256 key's 32 bytes, then its RSA companion's DER, sealed together.
    private static func addKey(store: any AccountStore, sealer: DataSealer, now: Date) async throws {
        let key = P256.Signing.PrivateKey()
        // An RSA key takes a tenth of a second of CPU or more: on a thread of Dispatch's global queue, not one of
        // the cooperative pool's few, which a rotation on a running server would otherwise hold from every request
        // (nor a small shared pool, where a rotation would queue behind every other key being made).
        let rsa = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) })
            }
        }
        let kid = WebAuthorization.randomToken(byteCount: 12)
        try await store.addSigningKey(
            SigningKeyRecord(
                kid: kid,
                sealedPrivateKey: try sealer.seal(Array(key.rawRepresentation) + Array(rsa.derRepresentation)),
                createdAt: now
            )
        )
    }

    /// Reads the key records; only keys not in `known` are unsealed and parsed.
    private static func load(
        store: any AccountStore,
        sealer: DataSealer,
        known: [String: OpenedKey] = [:]
    ) async throws -> Keys? {
        let records = try await store.signingKeys()
        guard let current = records.last(where: { $0.retiredAt == nil }) ?? records.last else { return nil }
        var verifying: [String: P256.Signing.PublicKey] = [:]
        var rsaVerifying: [String: _RSA.Signing.PublicKey] = [:]
        var retiredAt: [String: Date] = [:]
        var opened: [String: OpenedKey] = [:]
        for record in records {
            let key = try known[record.kid] ?? open(try sealer.open(record.sealedPrivateKey), kid: record.kid)
            opened[record.kid] = key
            verifying[record.kid] = key.ec.publicKey
            if let rsa = key.rsa { rsaVerifying[record.kid + rsaKidSuffix] = rsa.publicKey }
            retiredAt[record.kid] = record.retiredAt
        }
        guard let signing = opened[current.kid] else { return nil }
        return Keys(
            currentKid: current.kid,
            signing: signing.ec,
            rsaSigning: signing.rsa,
            opened: opened,
            verifying: verifying,
            rsaVerifying: rsaVerifying,
            retiredAt: retiredAt
        )
    }

    /// A stored key's bytes: 32 of P-256, then the RSA companion's DER when there is one.
    private static func open(_ bytes: [UInt8], kid: String) throws -> OpenedKey {
        let ec = try P256.Signing.PrivateKey(rawRepresentation: bytes.prefix(32))
        let raw = Array(ec.publicKey.x963Representation)  // 0x04 || x || y
        let x = Base64URL.encode(raw[1..<33])
        let y = Base64URL.encode(raw[33..<65])
        var jwks = [#"{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"\#(kid)","x":"\#(x)","y":"\#(y)"}"#]
        guard bytes.count > 32 else { return OpenedKey(ec: ec, rsa: nil, publicJWKs: jwks) }
        let rsa = try _RSA.Signing.PrivateKey(derRepresentation: bytes.dropFirst(32))
        let primitives = try rsa.publicKey.getKeyPrimitives()
        let n = Base64URL.encode(Array(primitives.modulus))
        let e = Base64URL.encode(Array(primitives.publicExponent))
        jwks.append(#"{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(kid + rsaKidSuffix)","n":"\#(n)","e":"\#(e)"}"#)
        return OpenedKey(ec: ec, rsa: rsa, publicJWKs: jwks)
    }

    /// Signs an access token for `userID` in `sessionID`.
    public func issue(userID: UserID, sessionID: SessionID) throws -> (token: String, expiresIn: Int) {
        try issue(userID: userID, sessionID: sessionID, openID: nil)
    }

    /// Signs an access token; one issued by the OpenID provider is typed `at+jwt` and names its relying party
    /// (`client_id`) and the granted `scope`, as RFC 9068 has it, so that it can never pass for a session.
    func issue(
        userID: UserID,
        sessionID: SessionID,
        openID: (clientID: String, scope: String)?
    ) throws -> (token: String, expiresIn: Int) {
        let now = Int64(clock.now.timeIntervalSince1970)
        let lifetime = Int64(configuration.accessTokenLifetime)
        var claims = JSONWriter.object([
            "iss": .string(configuration.publicURL),
            "aud": .string(configuration.accessTokenAudience),
            "sub": .string(userID.description),
            "sid": .string(sessionID.description),
            "iat": .integer(now),
            "exp": .integer(now + lifetime),
            "jti": .string(WebAuthorization.randomToken(byteCount: 16)),
        ])
        guard let openID else { return (try sign(claims), Int(lifetime)) }
        claims.removeLast()  // the closing brace: the object goes on
        claims.append(contentsOf: ",\"client_id\":".utf8)
        JSONWriter.appendString(openID.clientID, to: &claims)
        claims.append(contentsOf: ",\"scope\":".utf8)
        JSONWriter.appendString(openID.scope, to: &claims)
        claims.append(UInt8(ascii: "}"))
        return (try sign(claims, type: Self.relyingPartyTokenType), Int(lifetime))
    }

    /// RFC 9068's media type of an OAuth access token, in the header of a relying party's tokens.
    static let relyingPartyTokenType = "at+jwt"

    /// Signs a JWT (ES256, with the current key's `kid`) over a JSON object: access tokens and, for clients that ask
    /// for ES256, the OpenID provider's ID tokens, so that one JWKS verifies both.
    func sign(_ claims: [UInt8], type: String = "JWT") throws -> String {
        let (kid, key) = keys.withLock { ($0.currentKid, $0.signing) }
        let header = JSONWriter.object(["alg": .string("ES256"), "kid": .string(kid), "typ": .string(type)])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Signs a JWT RS256 (RSASSA-PKCS1-v1_5 with SHA-256) with the current key's RSA companion: ID tokens and
    /// logout tokens.
    func signRS256(_ claims: [UInt8], type: String = "JWT") throws -> String {
        let (kid, key) = keys.withLock { ($0.currentKid + Self.rsaKidSuffix, $0.rsaSigning) }
        guard let key else {
            throw AuthServerError(.internalServerError, AuthServerError.Code.internalError, "no RSA signing key")
        }
        let header = JSONWriter.object(["alg": .string("RS256"), "kid": .string(kid), "typ": .string(type)])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(
            for: SHA256.hash(data: Array(signingInput.utf8)),
            padding: .insecurePKCS1v1_5
        )
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The claims of a JWT signed by one of this server's keys with this server's `iss`, whatever its audience and
    /// expiry (an ID token given back as `id_token_hint`, which may have expired); `nil` when the signature or `iss`
    /// does not check.
    func signedClaims(_ token: String) -> JSONValue? {
        // A logout token is only ever a logout token: never a hint, nor a token to revoke.
        guard let (header, claims) = signedToken(token), header["typ"]?.stringValue != Self.logoutTokenType else {
            return nil
        }
        return claims
    }

    /// The media type of a back-channel logout token (OpenID Connect Back-Channel Logout 1.0 §2.4), in its header,
    /// so that no verifier takes it for an ID or access token.
    static let logoutTokenType = "logout+jwt"

    /// The header and claims of a JWT signed by one of this server's keys with this server's `iss`.
    private func signedToken(_ token: String) -> (header: JSONValue, claims: JSONValue)? {
        guard token.utf8.count <= 8192 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(Array(parts[0].utf8)),
            let header = try? JSONReader.parseObject(headerBytes),
            let kid = header["kid"]?.stringValue,
            let signatureBytes = Base64URL.decode(Array(parts[2].utf8)),
            isValidSignature(signatureBytes, alg: header["alg"]?.stringValue, kid: kid, for: token, parts: parts),
            let payload = Base64URL.decode(Array(parts[1].utf8)),
            let claims = try? JSONReader.parseObject(payload),
            claims["iss"]?.stringValue == configuration.publicURL
        else { return nil }
        return (header, claims)
    }

    /// Whether `signature` is `alg`'s signature by the key `kid` over the token's signing input: ES256 by a stored
    /// key, or RS256 by a stored key's RSA companion (ID tokens given back as hints).
    private func isValidSignature(
        _ signature: [UInt8],
        alg: String?,
        kid: String,
        for token: String,
        parts: [Substring]
    ) -> Bool {
        let signingInput = Array(token.utf8[..<parts[1].endIndex])
        switch alg {
        case "ES256":
            guard let key = keys.withLock({ $0.verifying[kid] }),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return key.isValidSignature(signature, for: signingInput)
        case "RS256":
            guard let key = keys.withLock({ $0.rsaVerifying[kid] }) else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: SHA256.hash(data: signingInput),
                padding: .insecurePKCS1v1_5
            )
        default:
            return false
        }
    }

    /// Verifies an access token: ES256 by a known key, `iss`, `aud`, `exp`, and its kind: a session (`typ: JWT`, no
    /// `client_id` or `scope`) or a relying party's (`typ: at+jwt` with both); nil when any check fails.
    public func verify(_ token: String) -> VerifiedAccessToken? {
        let now = clock.now
        if let cached = cache.withLock({ $0[token] }) {
            return cached.expiresAt > now ? cached : nil
        }
        guard let verified = verifyUncached(token, now: now) else { return nil }
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit {
                cache = cache.filter { $0.value.expiresAt > now }
                if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            }
            cache[token] = verified
        }
        return verified
    }

    private func verifyUncached(_ token: String, now: Date) -> VerifiedAccessToken? {
        guard token.utf8.count <= 4096, let (header, claims) = signedToken(token),
            header["alg"]?.stringValue == "ES256",
            claims["aud"]?.stringValue == configuration.accessTokenAudience,
            let exp = claims["exp"]?.doubleValue, exp > now.timeIntervalSince1970,
            let iat = claims["iat"]?.doubleValue,
            let userID = claims["sub"]?.stringValue.flatMap(UserID.init),
            let sessionID = claims["sid"]?.stringValue.flatMap(SessionID.init),
            let jti = claims["jti"]?.stringValue
        else { return nil }
        // A retired key signed its last token before its retirement: none of its tokens outlives that by more than a
        // token's lifetime (and the minute the key set allows for clocks). So a rotation also ends what a leaked old
        // key could still sign: a token that claims to live longer, or is presented later, is refused.
        if let kid = header["kid"]?.stringValue, let retired = keys.withLock({ $0.retiredAt[kid] }) {
            let lastExpiry = retired.timeIntervalSince1970 + configuration.accessTokenLifetime + 60
            guard exp <= lastExpiry, now.timeIntervalSince1970 <= lastExpiry else { return nil }
        }
        let clientID = claims["client_id"]?.stringValue
        let scope = claims["scope"]?.stringValue
        switch header["typ"]?.stringValue {
        case "JWT" where clientID == nil && scope == nil:
            return .session(
                AccessTokenClaims(
                    userID: userID,
                    sessionID: sessionID,
                    tokenID: jti,
                    issuedAt: Date(timeIntervalSince1970: iat),
                    expiresAt: Date(timeIntervalSince1970: exp)
                )
            )
        case Self.relyingPartyTokenType:
            guard let clientID, let scope else { return nil }
            return .relyingParty(
                RelyingPartyAccessClaims(
                    userID: userID,
                    sessionID: sessionID,
                    tokenID: jti,
                    issuedAt: Date(timeIntervalSince1970: iat),
                    expiresAt: Date(timeIntervalSince1970: exp),
                    clientID: clientID,
                    scope: scope
                )
            )
        default:
            // A token of one kind with the other's claims was not signed by this version of siwa.
            return nil
        }
    }

    /// The public keys at `/.well-known/jwks.json`: every key whose tokens may still be valid, P-256 (ES256) and its
    /// RSA companion (RS256).
    public func jwks() -> [UInt8] {
        let now = clock.now
        let entries = keys.withLock { keys -> [String] in
            keys.opened.flatMap { kid, key -> [String] in
                if let retired = keys.retiredAt[kid],
                    now.timeIntervalSince(retired) > configuration.accessTokenLifetime + 60
                {
                    return []
                }
                return key.publicJWKs
            }.sorted()
        }
        return Array(#"{"keys":[\#(entries.joined(separator: ","))]}"#.utf8)
    }
}
