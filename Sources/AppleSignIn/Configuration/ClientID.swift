/// A Sign in with Apple client id: an app's bundle id (native sign-in) or a Services ID (web and Android sign-in).
/// Identity tokens carry it as `aud`; code exchange, refresh and revocation send it as `client_id`.
public struct ClientID: Hashable, Sendable, CustomStringConvertible, Codable, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Wraps a client id as it is, unchecked: for ids that come from a verified token or from code.
    /// - Parameter rawValue: the bundle id or Services ID.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a client id written in code, unchecked, as ``init(_:)`` does.
    /// - Parameter value: the bundle id or Services ID.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// Validates a configured client id: a reverse-DNS-like identifier of letters, digits, `.`, `-` and `_`.
    /// - Parameters:
    ///   - rawValue: the configured value; surrounding ASCII whitespace is dropped, and at most 255 bytes remain.
    ///   - setting: the name of the setting, used in the error reason.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming `setting`.
    public init(validating rawValue: String, setting: String) throws(AppleSignInError) {
        let trimmed = rawValue.trimmingASCIIWhitespace()
        let allowed = trimmed.utf8.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E
                || $0 == 0x2D || $0 == 0x5F
        }
        guard !trimmed.isEmpty, trimmed.utf8.count <= 255, allowed else {
            throw .invalidConfiguration(
                setting,
                "a client id is a bundle id or Services ID such as com.example.app (letters, digits, '.', '-', '_')"
            )
        }
        self.rawValue = trimmed
    }

    public var description: String { rawValue }
}
