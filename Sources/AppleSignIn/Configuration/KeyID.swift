/// The id of a Sign in with Apple private key (`.p8`): ten upper-case letters and digits, shown next to the key in
/// Certificates, Identifiers & Profiles and in the key's file name `AuthKey_<KeyID>.p8`.
public struct KeyID: Hashable, Sendable, CustomStringConvertible, Codable {
    public let rawValue: String

    /// Validates the shape Apple gives key ids.
    /// - Parameters:
    ///   - rawValue: the configured value; surrounding ASCII whitespace is dropped.
    ///   - setting: the name of the setting, used in the error reason.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming `setting`.
    public init(_ rawValue: String, setting: String = "keyID") throws(AppleSignInError) {
        let trimmed = rawValue.trimmingASCIIWhitespace()
        guard trimmed.isAppleTenCharacterIdentifier else {
            throw .invalidConfiguration(
                setting,
                "a Key ID is 10 upper-case letters or digits (\(trimmed.tenCharacterIdentifierMistake)); "
                    + "it is the XXXXXXXXXX in AuthKey_XXXXXXXXXX.p8"
            )
        }
        self.rawValue = trimmed
    }

    public var description: String { rawValue }
}
