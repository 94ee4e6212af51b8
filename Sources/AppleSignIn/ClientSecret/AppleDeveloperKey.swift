public import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Sign in with Apple private key (the `.p8` file Apple lets you download once), parsed into a P-256 signing key.
///
/// The text it came from is dropped after parsing; the value prints redacted.
///
/// - Warning: this is the key that lets anyone act as your app towards Apple. Keep it out of logs and repositories.
public struct AppleDeveloperKey: Sendable, CustomStringConvertible {
    /// Where the key comes from.
    public enum Source: Sendable {
        /// A path to the `.p8` file: PEM as Apple issues it, its DER body, or base64 of either.
        case file(String)
        /// Base64 of the `.p8` file (or of its DER body), as secret stores and CI variables often hold it.
        case base64(String)
        /// The `.p8` PEM text itself. Literal `\n` sequences (the usual environment-variable mistake) are accepted.
        case pem(String)
    }

    /// The parsed key.
    public let privateKey: P256.Signing.PrivateKey

    /// Wraps an already parsed key (tests and the emulator generate their own).
    /// - Parameter privateKey: the P-256 key.
    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// Loads and parses a key.
    /// - Parameters:
    ///   - source: where the key is.
    ///   - setting: the name of the setting, used in error reasons.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` saying what is wrong with the key and how to fix it.
    public init(_ source: Source, setting: String = "privateKey") throws(AppleSignInError) {
        switch source {
        case .file(let path):
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw .invalidConfiguration(setting, "cannot read the key file at \(path)")
            }
            // The .p8 as downloaded (PEM), its DER body, or its base64 (as secret stores and CI variables export it).
            if let text = String(validating: Array(data), as: UTF8.self), !text.contains("-----BEGIN"),
                let decoded = Data(base64Encoded: text.filter { !$0.isWhitespace })
            {
                self.privateKey = try Self.parse(bytes: Array(decoded), setting: setting)
            } else {
                self.privateKey = try Self.parse(bytes: Array(data), setting: setting)
            }
        case .pem(let text):
            self.privateKey = try Self.parse(bytes: Array(text.utf8), setting: setting)
        case .base64(let text):
            let compact = text.filter { !$0.isWhitespace }
            guard let data = Data(base64Encoded: compact) ?? Data(base64Encoded: Self.standardBase64(compact)) else {
                throw .invalidConfiguration(setting, "the value is not valid base64; encode the .p8 file with base64")
            }
            self.privateKey = try Self.parse(bytes: Array(data), setting: setting)
        }
    }

    public var description: String { "AppleDeveloperKey(P-256, redacted)" }

    /// Accepts PEM text (with real or literal `\n` line breaks, or none at all) or raw DER.
    private static func parse(bytes: [UInt8], setting: String) throws(AppleSignInError) -> P256.Signing.PrivateKey {
        let der: [UInt8]
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN") {
            der = try derFromPEM(text, setting: setting)
        } else {
            der = bytes
        }
        return try parsePKCS8(der, setting: setting)
    }

    private static func derFromPEM(_ pem: String, setting: String) throws(AppleSignInError) -> [UInt8] {
        let text = pem.replacing("\\r", with: "").replacing("\\n", with: "\n")
        guard let beginRange = text.firstRange(of: "-----BEGIN "),
            let labelEnd = text[beginRange.upperBound...].firstRange(of: "-----")
        else {
            throw .invalidConfiguration(setting, "the PEM has no -----BEGIN PRIVATE KEY----- line")
        }
        let label = String(text[beginRange.upperBound..<labelEnd.lowerBound])
        switch label {
        case "PRIVATE KEY": break
        case "EC PRIVATE KEY":
            throw .invalidConfiguration(
                setting,
                "this is a SEC1 'EC PRIVATE KEY', not the PKCS#8 .p8 Apple issues; "
                    + "convert it with 'openssl pkcs8 -topk8 -nocrypt' or use the AuthKey_*.p8 file as downloaded"
            )
        case "ENCRYPTED PRIVATE KEY":
            throw .invalidConfiguration(setting, "the key is encrypted; use the unencrypted AuthKey_*.p8 from Apple")
        default:
            throw .invalidConfiguration(
                setting,
                "the PEM holds a '\(label)', not a P-256 'PRIVATE KEY'; use the AuthKey_*.p8 file from Apple"
            )
        }
        guard let endRange = text[labelEnd.upperBound...].firstRange(of: "-----END PRIVATE KEY-----")
        else {
            throw .invalidConfiguration(setting, "the PEM has no -----END PRIVATE KEY----- line; the key is cut off")
        }
        let body = text[labelEnd.upperBound..<endRange.lowerBound].filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: String(body)) else {
            throw .invalidConfiguration(setting, "the PEM body is not valid base64; the key was damaged when copied")
        }
        return Array(data)
    }

    private static func parsePKCS8(_ der: [UInt8], setting: String) throws(AppleSignInError) -> P256.Signing.PrivateKey
    {
        // PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, SEQUENCE { algorithm OID, parameters }, OCTET STRING }.
        // SEC1 ECPrivateKey starts SEQUENCE { INTEGER 1, OCTET STRING, ... } instead.
        guard der.count > 8, der[0] == 0x30 else {
            throw .invalidConfiguration(setting, "the key is neither PEM nor DER; use the AuthKey_*.p8 file from Apple")
        }
        let rsaEncryptionOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
        if der.firstRange(of: rsaEncryptionOID) != nil {
            throw .invalidConfiguration(
                setting,
                "this is an RSA key; Sign in with Apple keys are P-256 (ES256) .p8 keys"
            )
        }
        let ecPublicKeyOID: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
        guard der.firstRange(of: ecPublicKeyOID) != nil else {
            throw .invalidConfiguration(
                setting,
                "this is not a PKCS#8 EC private key; use the AuthKey_*.p8 file from Apple"
            )
        }
        do {
            return try P256.Signing.PrivateKey(derRepresentation: der)
        } catch {
            throw .invalidConfiguration(setting, "the key is not a P-256 key (Apple's .p8 keys use the P-256 curve)")
        }
    }

    /// Turns base64url or unpadded base64 into padded standard base64.
    private static func standardBase64(_ text: String) -> String {
        var converted = text.replacing("-", with: "+").replacing("_", with: "/")
        while converted.utf8.count % 4 != 0 { converted.append("=") }
        return converted
    }
}
