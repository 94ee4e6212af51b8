public import AppleSignIn
public import CryptoExtras

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// RSA keys generated at test time that play Apple's part: they publish a JWKS and sign identity tokens and
/// notifications with any header and claims a test wants, including broken ones.
public struct TestAppleKeys: Sendable {
    public struct Key: Sendable {
        public let kid: String
        public let privateKey: _RSA.Signing.PrivateKey
    }

    public let keys: [Key]

    /// Generates `count` RSA-2048 keys with kids `test-key-1`, `test-key-2`, ...
    public init(count: Int = 1, kidPrefix: String = "test-key-") throws {
        self.keys = try (1...count).map {
            Key(kid: "\(kidPrefix)\($0)", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        }
    }

    public init(keys: [Key]) {
        self.keys = keys
    }

    /// The first key's id.
    public var kid: String { keys[0].kid }

    /// The JWKS document Apple would serve for these keys.
    public func jwks() throws -> [UInt8] {
        let entries = try keys.map { key -> String in
            let primitives = try key.privateKey.publicKey.getKeyPrimitives()
            return
                #"{"kty":"RSA","kid":"\#(key.kid)","use":"sig","alg":"RS256","n":"\#(Base64URLText.encode(primitives.modulus))","e":"\#(Base64URLText.encode(primitives.publicExponent))"}"#
        }
        return Array(#"{"keys":[\#(entries.joined(separator: ","))]}"#.utf8)
    }

    /// The parsed key set.
    public func keySet() throws -> AppleKeySet {
        try AppleKeySet(jwks: jwks())
    }

    /// Signs a compact JWS with RS256 over exactly the given header and claims JSON.
    public func sign(headerJSON: String, claimsJSON: String, kid: String? = nil) throws -> String {
        let key = kid.flatMap { wanted in keys.first { $0.kid == wanted } } ?? keys[0]
        let signingInput =
            Base64URLText.encode(Array(headerJSON.utf8)) + "." + Base64URLText.encode(Array(claimsJSON.utf8))
        let signature = try key.privateKey.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URLText.encode(signature.rawRepresentation)
    }

    /// Signs an identity token with Apple's header (`kid`, `alg` RS256) and the given claims.
    public func identityToken(_ claims: TestClaims, kid: String? = nil) throws -> String {
        let kid = kid ?? keys[0].kid
        return try sign(headerJSON: #"{"kid":"\#(kid)","alg":"RS256"}"#, claimsJSON: claims.json, kid: kid)
    }
}

/// Identity-token claims for tests, serialised in Apple's field order; `extra` adds or overrides raw JSON members.
public struct TestClaims: Sendable {
    public var iss = "https://appleid.apple.com"
    public var aud: String
    public var sub: String
    public var iat: Int
    public var exp: Int
    public var nonce: String?
    public var email: String?
    /// Raw JSON members appended as given, e.g. `"\"email_verified\":\"true\""`.
    public var extra: [String]

    public init(
        aud: String,
        sub: String = "001234.abcdef0123456789abcdef0123456789.1234",
        now: Date,
        lifetime: Int = 600,
        nonce: String? = nil,
        email: String? = nil,
        extra: [String] = []
    ) {
        self.aud = aud
        self.sub = sub
        self.iat = Int(now.timeIntervalSince1970)
        self.exp = iat + lifetime
        self.nonce = nonce
        self.email = email
        self.extra = extra
    }

    public var json: String {
        var members = [
            #""iss":"\#(iss)""#, #""aud":"\#(aud)""#, #""exp":\#(exp)"#, #""iat":\#(iat)"#, #""sub":"\#(sub)""#,
        ]
        if let nonce { members.append(#""nonce":"\#(nonce)""#) }
        if let email { members.append(#""email":"\#(email)""#) }
        members += extra
        return "{" + members.joined(separator: ",") + "}"
    }
}

/// Base64url for test data (the library's own encoder is package-internal).
public enum Base64URLText {
    public static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }
}
