/// An Apple Developer Team ID: ten upper-case letters and digits (for example `ABCDE12345`).
public struct TeamID: Hashable, Sendable, CustomStringConvertible, Codable {
    public let rawValue: String

    /// Validates the shape Apple gives team ids.
    /// - Parameters:
    ///   - rawValue: the configured value; surrounding ASCII whitespace is dropped.
    ///   - setting: the name of the setting, used in the error reason.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming `setting`.
    public init(_ rawValue: String, setting: String = "teamID") throws(AppleSignInError) {
        let trimmed = rawValue.trimmingASCIIWhitespace()
        guard trimmed.isAppleTenCharacterIdentifier else {
            throw .invalidConfiguration(
                setting,
                "a Team ID is 10 upper-case letters or digits (\(trimmed.tenCharacterIdentifierMistake)); "
                    + "find it under Membership details at developer.apple.com/account"
            )
        }
        self.rawValue = trimmed
    }

    public var description: String { rawValue }
}

extension String {
    /// Apple's team ids and key ids: exactly ten characters from A-Z and 0-9.
    var isAppleTenCharacterIdentifier: Bool {
        utf8.count == 10 && utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// What is wrong with a value that is not ``isAppleTenCharacterIdentifier``, in words: the length, or the
    /// lower-case letters (with the value that would be right), or the characters that are not allowed.
    var tenCharacterIdentifierMistake: String {
        let upper = uppercased()
        if utf8.count == 10, upper.isAppleTenCharacterIdentifier {
            return "'\(self)' has lower-case letters: did you mean \(upper)?"
        }
        if utf8.count != 10 { return "got \(count) characters" }
        return "'\(self)' has characters other than A-Z and 0-9"
    }

    func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 || bytes[start] == 0x0A || bytes[start] == 0x0D
        {
            start += 1
        }
        while end > start,
            bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0A
                || bytes[end - 1] == 0x0D
        {
            end -= 1
        }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
