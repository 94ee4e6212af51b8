import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The checks common to everything Apple signs (identity tokens and server-to-server notifications): compact JWS
/// structure, RS256 only, key by `kid`, signature, then `iss`, `aud`, `exp` and `iat`.
///
/// The token is split once, each part base64url-decoded once, the header and the claims each read once; the RSA key
/// was parsed when the key set was fetched.
struct SignedAppleJWT {
    /// The longest token accepted; Apple's are about 1 KB.
    static let maximumLength = 16 * 1024

    let claims: JSONValue
    let audience: ClientID
    let issuer: String
    let issuedAt: Date
    let expiresAt: Date

    /// Verifies `token`.
    static func verify(
        _ token: String,
        keys: AppleKeyCache,
        configuration: AppleSignInConfiguration,
        now: Date
    ) async throws(AppleSignInError) -> SignedAppleJWT {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumLength else { throw .malformed("token is longer than \(maximumLength) bytes") }
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
            bytes[(secondDot + 1)...].firstIndex(of: UInt8(ascii: ".")) == nil
        else { throw .malformed("token is not three dot-separated parts") }

        // Header: algorithm first, before any key is touched.
        guard let headerBytes = Base64URL.decode(bytes[..<firstDot]) else {
            throw .malformed("header is not base64url")
        }
        let header: JSONValue
        do {
            header = try JSONReader.parseObject(headerBytes)
        } catch {
            throw .malformed("header is not a JSON object (\(error))")
        }
        guard let algorithm = header["alg"]?.stringValue else { throw .malformed("header has no 'alg'") }
        guard algorithm == "RS256" else {
            throw AppleSignInError(
                .algorithmNotAllowed,
                "algorithm '\(algorithm.prefix(16))' is not allowed; only RS256"
            )
        }
        guard header["crit"] == nil else { throw .malformed("header has unsupported critical extensions") }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty, kid.utf8.count <= 128 else {
            throw .malformed("header has no usable 'kid'")
        }

        guard let signature = Base64URL.decode(bytes[(secondDot + 1)...]), !signature.isEmpty else {
            throw .malformed("signature is not base64url")
        }
        guard let payload = Base64URL.decode(bytes[(firstDot + 1)..<secondDot]) else {
            throw .malformed("payload is not base64url")
        }

        let key = try await keys.key(for: kid)
        let digest = bytes.withUnsafeBufferPointer {
            SHA256.hash(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[..<secondDot])))
        }
        guard
            key.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: digest,
                padding: .insecurePKCS1v1_5
            )
        else {
            throw AppleSignInError(.badSignature, "signature does not verify with Apple's key '\(kid)'")
        }

        let claims: JSONValue
        do {
            claims = try JSONReader.parseObject(payload)
        } catch {
            throw .malformed("claims are not a JSON object (\(error))")
        }

        guard let issuer = claims["iss"]?.stringValue else { throw .malformed("claim 'iss' is missing") }
        guard
            issuer == AppleSignInConfiguration.appleIssuer
                || (configuration.acceptsAccountAppleIssuer && issuer == AppleSignInConfiguration.accountAppleIssuer)
        else {
            throw AppleSignInError(
                .issuerMismatch,
                "issuer '\(issuer.prefix(100))' is not \(AppleSignInConfiguration.appleIssuer)"
            )
        }

        let audience = try matchAudience(claims["aud"], allowed: configuration.allowedClientIDs)

        guard let exp = claims["exp"]?.doubleValue, exp.isFinite else { throw .malformed("claim 'exp' is missing") }
        guard let iat = claims["iat"]?.doubleValue, iat.isFinite else { throw .malformed("claim 'iat' is missing") }
        let nowSeconds = now.timeIntervalSince1970
        let leeway = configuration.clockLeeway
        guard nowSeconds <= exp + leeway else {
            throw AppleSignInError(.expired, "token expired \(Int(nowSeconds - exp)) s ago (leeway \(Int(leeway)) s)")
        }
        guard iat <= nowSeconds + leeway else {
            throw AppleSignInError(
                .issuedInFuture,
                "token issued \(Int(iat - nowSeconds)) s in the future (leeway \(Int(leeway)) s); check the server clock"
            )
        }
        return SignedAppleJWT(
            claims: claims,
            audience: audience,
            issuer: issuer,
            issuedAt: Date(timeIntervalSince1970: iat),
            expiresAt: Date(timeIntervalSince1970: exp)
        )
    }

    /// `aud` is a string, or (as JWT allows) an array of strings; one of them must be an allowed client id.
    private static func matchAudience(_ value: JSONValue?, allowed: [ClientID]) throws(AppleSignInError) -> ClientID {
        switch value {
        case .string(let audience):
            let clientID = ClientID(audience)
            guard allowed.contains(clientID) else { throw .audienceMismatch(got: String(audience.prefix(255))) }
            return clientID
        case .array(let values):
            let audiences = values.compactMap(\.stringValue)
            guard audiences.count == values.count, !audiences.isEmpty else {
                throw .malformed("claim 'aud' is not a string or an array of strings")
            }
            guard let match = audiences.first(where: { allowed.contains(ClientID($0)) }) else {
                throw .audienceMismatch(got: String(audiences.joined(separator: ",").prefix(255)))
            }
            return ClientID(match)
        default:
            throw .malformed("claim 'aud' is missing")
        }
    }
}
