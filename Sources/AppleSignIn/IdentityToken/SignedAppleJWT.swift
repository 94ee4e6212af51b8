import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The checks common to everything Apple signs (identity tokens and server-to-server notifications): compact JWS
/// structure, RS256 only, key by `kid`, signature, then `iss`, `aud`, `exp` and `iat`, as functions that
/// ``AppleJWTCheck/common`` lists in order; a value of this type is what they verified.
///
/// The token is split once, each part base64url-decoded once, the header and the claims each read once; the RSA key
/// was parsed when the key set was fetched.
struct SignedAppleJWT {
    /// The longest token accepted; Apple's are about 1 KB.
    static let maximumLength = 16 * 1024

    let claims: JSONObjectView
    let audience: ClientID
    let issuer: String
    let issuedAt: Date
    let expiresAt: Date

    /// A compact JWS split and decoded, nothing verified yet: the three parts decoded side by side into one buffer.
    struct Parts {
        /// The decoded header, read as a view of its members; its buffer holds the payload and the signature after
        /// it.
        let header: JSONObjectView
        /// Where the decoded payload (JSON, not yet parsed) is in the header's buffer.
        let payloadRange: Range<Int>
        /// Where the decoded signature is in the header's buffer.
        let signatureRange: Range<Int>
        /// SHA-256 of the signing input (`header.payload` as sent).
        let digest: SHA256.Digest

        /// The header's JSON text.
        var headerBytes: ArraySlice<UInt8> { header.text }
        /// The payload's JSON text.
        var payload: ArraySlice<UInt8> { header.bytes[payloadRange] }
    }

    /// Splits the token into its three parts and decodes each once, reading the token's UTF-8 in place.
    static func decode(_ token: String) throws(AppleSignInError) -> Parts {
        guard token.utf8.count <= maximumLength else { throw .malformed("token is longer than \(maximumLength) bytes") }
        let result = token.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(AppleSignInError) -> Parts in try decode(bytes: bytes) }
        }
        if let result { return try result.get() }
        return try Array(token.utf8).withUnsafeBufferPointer { bytes throws(AppleSignInError) in
            try decode(bytes: bytes)
        }
    }

    private static func decode(bytes: UnsafeBufferPointer<UInt8>) throws(AppleSignInError) -> Parts {
        guard let firstDot = dotOffset(in: bytes, from: 0), let secondDot = dotOffset(in: bytes, from: firstDot + 1)
        else { throw .malformed("token is not three dot-separated parts") }
        do {
            return try decode(bytes: bytes, firstDot: firstDot, secondDot: secondDot)
        } catch {
            // A third dot makes the signature fail to decode; only then is it looked for, so that the token is
            // scanned once on the way that succeeds, and the structure is still what a four-part token is told.
            if dotOffset(in: bytes, from: secondDot + 1) != nil {
                throw .malformed("token is not three dot-separated parts")
            }
            throw error
        }
    }

    private static func decode(
        bytes: UnsafeBufferPointer<UInt8>,
        firstDot: Int,
        secondDot: Int
    ) throws(AppleSignInError) -> Parts {
        let headerText = UnsafeBufferPointer(rebasing: bytes[..<firstDot])
        let payloadText = UnsafeBufferPointer(rebasing: bytes[(firstDot + 1)..<secondDot])
        let signatureText = UnsafeBufferPointer(rebasing: bytes[(secondDot + 1)...])
        // The three parts are decoded side by side into one buffer, and the failures told in the order the parts
        // are used (header, its JSON, signature, payload).
        guard let headerCount = Base64URL.decodedCount(headerText.count) else {
            throw .malformed("header is not base64url")
        }
        let payloadCount = Base64URL.decodedCount(payloadText.count)
        let signatureCount = Base64URL.decodedCount(signatureText.count)
        let payloadEnd = headerCount + (payloadCount ?? 0)
        var headerDecoded = false
        var payloadDecoded = false
        var signatureDecoded = false
        let decoded = [UInt8](unsafeUninitializedCapacity: payloadEnd + (signatureCount ?? 0)) { buffer, initialized in
            headerDecoded = Base64URL.decode(headerText, into: buffer.baseAddress)
            payloadDecoded =
                payloadCount != nil && Base64URL.decode(payloadText, into: buffer.baseAddress.map { $0 + headerCount })
            signatureDecoded =
                signatureCount != nil
                && Base64URL.decode(signatureText, into: buffer.baseAddress.map { $0 + payloadEnd })
            // Past a part that failed, nothing is read: its failure is thrown once the header has been read.
            initialized = !headerDecoded ? 0 : payloadDecoded && signatureDecoded ? buffer.count : headerCount
        }
        guard headerDecoded else { throw .malformed("header is not base64url") }
        let header: JSONObjectView
        do {
            header = try JSONReader.parseObjectView(decoded, range: 0..<headerCount)
        } catch {
            throw .malformed("header is not a JSON object (\(error))")
        }
        guard signatureDecoded else { throw .malformed("signature is not base64url") }
        guard payloadDecoded else { throw .malformed("payload is not base64url") }
        let digest = SHA256.hash(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[..<secondDot])))
        return Parts(
            header: header,
            payloadRange: headerCount..<payloadEnd,
            signatureRange: payloadEnd..<decoded.count,
            digest: digest
        )
    }

    /// The offset of the first `.` at or after `start`, read eight bytes at a time (a token is about 1 KB, and its
    /// parts are found before anything else is done with it).
    static func dotOffset(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let dots = ones &* UInt64(UInt8(ascii: "."))
        var index = start
        while index + 8 <= bytes.count {
            // A byte of `word` is zero where the token has a dot; the expression sets that byte's high bit (and
            // possibly those above it, which the lowest-set-bit search ignores).
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self).littleEndian ^ dots
            let found = (word &- ones) & ~word & (ones &* 0x80)
            if found != 0 { return index + found.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: ".") { return index }
            index += 1
        }
        return nil
    }

    /// RS256 only: `none`, HS*, ES* and everything else are refused before any key is touched.
    static func checkAlgorithm(_ parts: Parts) throws(AppleSignInError) {
        guard let algorithm = parts.header["alg"]?.stringValue else { throw .malformed("header has no 'alg'") }
        guard algorithm == "RS256" else {
            throw AppleSignInError(
                .algorithmNotAllowed,
                "algorithm \(LoggedText.quoted(algorithm, limit: 16)) is not allowed; only RS256"
            )
        }
        guard parts.header["crit"] == nil else { throw .malformed("header has unsupported critical extensions") }
    }

    /// The `kid` that names Apple's key.
    static func keyID(_ parts: Parts) throws(AppleSignInError) -> String {
        guard let kid = parts.header["kid"]?.stringValue, !kid.isEmpty, kid.utf8.count <= 128 else {
            throw .malformed("header has no usable 'kid'")
        }
        return kid
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over the signing input.
    static func checkSignature(_ parts: Parts, key: AppleSigningKey) throws(AppleSignInError) {
        guard !parts.signatureRange.isEmpty else { throw .malformed("signature is empty") }
        // The signature's bytes copied once into the `Data` the check takes: the initialiser, generic over
        // `DataProtocol`, would copy them through a second buffer.
        var signature = _RSA.Signing.RSASignature(rawRepresentation: Data())
        signature.rawRepresentation = parts.header.bytes.withUnsafeBufferPointer { buffer in
            Data(buffer: UnsafeBufferPointer(rebasing: buffer[parts.signatureRange]))
        }
        guard key.publicKey.isValidSignature(signature, for: parts.digest, padding: .insecurePKCS1v1_5) else {
            throw AppleSignInError(.badSignature, "signature does not verify with Apple's key '\(key.keyID)'")
        }
    }

    /// The claims object.
    static func decodeClaims(_ parts: Parts) throws(AppleSignInError) -> JSONObjectView {
        do {
            return try JSONReader.parseObjectView(parts.header.bytes, range: parts.payloadRange)
        } catch {
            throw .malformed("claims are not a JSON object (\(error))")
        }
    }

    private static let knownIssuers = [
        AppleSignInConfiguration.appleIssuer, AppleSignInConfiguration.accountAppleIssuer,
    ]

    /// `iss` is Apple's (or, when configured, the short-lived `account.apple.com`).
    static func checkIssuer(
        _ claims: JSONObjectView,
        configuration: AppleSignInConfiguration
    ) throws(AppleSignInError) -> String {
        // Apple's issuer, compared where it is in the claims: no string made for it.
        if let issuer = claims.string("iss", isOneOf: knownIssuers),
            issuer == AppleSignInConfiguration.appleIssuer || configuration.acceptsAccountAppleIssuer
        {
            return issuer
        }
        guard let issuer = claims["iss"]?.stringValue else { throw .malformed("claim 'iss' is missing") }
        guard
            issuer == AppleSignInConfiguration.appleIssuer
                || (configuration.acceptsAccountAppleIssuer && issuer == AppleSignInConfiguration.accountAppleIssuer)
        else {
            throw AppleSignInError(
                .issuerMismatch,
                "issuer \(LoggedText.quoted(issuer, limit: 100)) is not \(AppleSignInConfiguration.appleIssuer)"
            )
        }
        return issuer
    }

    /// `exp` is not past by more than the leeway.
    static func checkExpiry(_ claims: JSONObjectView, now: Date, leeway: TimeInterval) throws(AppleSignInError) -> Date
    {
        guard let exp = claims.number("exp"), exp.isFinite else { throw .malformed("claim 'exp' is missing") }
        let nowSeconds = now.timeIntervalSince1970
        guard nowSeconds <= exp + leeway else {
            throw AppleSignInError(
                .expired,
                "token expired \(wholeSeconds(nowSeconds - exp)) s ago (leeway \(wholeSeconds(leeway)) s)"
            )
        }
        return Date(timeIntervalSince1970: exp)
    }

    /// `iat` is not in the future by more than the leeway ("token used before issued").
    static func checkIssuedAt(
        _ claims: JSONObjectView,
        now: Date,
        leeway: TimeInterval
    ) throws(AppleSignInError) -> Date {
        guard let iat = claims.number("iat"), iat.isFinite else { throw .malformed("claim 'iat' is missing") }
        let nowSeconds = now.timeIntervalSince1970
        guard iat <= nowSeconds + leeway else {
            throw AppleSignInError(
                .issuedInFuture,
                "token issued \(wholeSeconds(iat - nowSeconds)) s in the future (leeway \(wholeSeconds(leeway)) s); "
                    + "check the server clock"
            )
        }
        return Date(timeIntervalSince1970: iat)
    }

    /// Whole seconds for a message, clamped: a claim of `1e300` is a finite `Double` that `Int(_:)` would trap on.
    static func wholeSeconds(_ interval: TimeInterval) -> Int {
        Int(max(-1e15, min(1e15, interval)))
    }

    /// `aud` is a string, or (as JWT allows) an array of strings, naming exactly one audience, which must be an
    /// allowed client id: a token that also names another audience is refused (OpenID Connect Core 3.1.3.7, extra
    /// audiences not trusted by the client), whatever the order.
    static func matchAudience(
        _ claims: JSONObjectView,
        configuration: AppleSignInConfiguration
    ) throws(AppleSignInError) -> ClientID {
        // One plain string naming an allowed client (every token Apple signs): compared where it is, no string made.
        if case .plain(let clientID?) = claims.withPlainString("aud", { configuration.allowedClientID(named: $0) }) {
            return clientID
        }
        return try matchAudience(claims["aud"], configuration: configuration)
    }

    static func matchAudience(
        _ value: JSONValue?,
        configuration: AppleSignInConfiguration
    ) throws(AppleSignInError) -> ClientID {
        switch value {
        case .string(let audience):
            let clientID = ClientID(audience)
            guard configuration.allows(clientID) else { throw .audienceMismatch(got: String(audience.prefix(255))) }
            return clientID
        case .array(let values):
            let audiences = values.compactMap(\.stringValue)
            guard audiences.count == values.count, !audiences.isEmpty else {
                throw .malformed("claim 'aud' is not a string or an array of strings")
            }
            guard audiences.count == 1, let match = audiences.first, configuration.allows(ClientID(match)) else {
                throw .audienceMismatch(got: String(audiences.joined(separator: ",").prefix(255)))
            }
            return ClientID(match)
        default:
            throw .malformed("claim 'aud' is missing")
        }
    }
}
