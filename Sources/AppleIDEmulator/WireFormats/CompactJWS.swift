import Crypto
import CryptoExtras
import Foundation

/// JSON Web Signatures in compact form (`header.payload.signature`), written here rather than through a JWT library:
/// the emulator's headers are then exactly Apple's (`alg` and `kid`, no `typ`), and a client secret's header is checked
/// field by field instead of a library picking some key when its `kid` is unknown.
enum CompactJWS {
    /// A token's three parts, decoded from base64url.
    struct Parts {
        var header: Data
        var payload: Data
        /// `header.payload` as sent: what the signature signs.
        var signingInput: Data
        var signature: Data

        /// `nil` unless `token` is three base64url parts.
        init?(_ token: String) {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let header = CompactJWS.data(base64URL: parts[0]),
                let payload = CompactJWS.data(base64URL: parts[1]),
                let signature = CompactJWS.data(base64URL: parts[2])
            else { return nil }
            self.header = header
            self.payload = payload
            self.signingInput = Data("\(parts[0]).\(parts[1])".utf8)
            self.signature = signature
        }
    }

    /// Signs `claims` as Apple signs identity tokens and notifications: RS256 under the header
    /// `{"alg":"RS256","kid":kid}`.
    static func signRS256(_ claims: some Encodable, kid: String, key: _RSA.Signing.PrivateKey) throws -> String {
        let encoder = JSONEncoder()
        // Apple writes `https://appleid.apple.com`, not `https:\/\/appleid.apple.com`.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let input =
            "\(base64URL(try encoder.encode(["alg": "RS256", "kid": kid]))).\(base64URL(try encoder.encode(claims)))"
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return "\(input).\(base64URL(signature.rawRepresentation))"
    }

    /// Whether `parts` carry an ES256 signature (JWS's raw `r‖s`) by `key`.
    static func isSignedES256(_ parts: Parts, by key: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature) else { return false }
        return key.isValidSignature(signature, for: SHA256.hash(data: parts.signingInput))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func data(base64URL text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
