/// A one-time nonce for Sign in with Apple: the raw value goes to siwa, its SHA-256 to Apple.
///
/// Set `hashed` as `ASAuthorizationAppleIDRequest.nonce`; Apple puts it in the identity token's `nonce` claim. Pass
/// `raw` to `SiwaClient.signIn(…, nonce:)`; siwa hashes it and compares, so a token stolen from another sign-in
/// cannot be replayed. Make a new nonce for every sign-in request.
public struct SignInNonce: Sendable, Equatable {
    /// Characters of the raw nonce: the 64 characters of base64url, so each one carries 6 random bits.
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    /// The value to send to siwa.
    /// - Warning: keep it in memory for this one sign-in; do not log it.
    public let raw: String
    /// Lower-case hex SHA-256 of `raw`: the value for `ASAuthorizationAppleIDRequest.nonce`.
    public let hashed: String

    /// A fresh nonce of `length` characters (default 32, 192 bits) from the system's CSPRNG.
    public init(length: Int = 32) {
        var generator = SystemRandomNumberGenerator()
        self.init(length: length, using: &generator)
    }

    /// A nonce of `length` characters from `generator`.
    /// - Warning: use a cryptographically secure generator; this initialiser exists for deterministic tests.
    public init(length: Int = 32, using generator: inout some RandomNumberGenerator) {
        precondition(length > 0, "a nonce needs at least one character")
        var characters: [Character] = []
        characters.reserveCapacity(length)
        while characters.count < length {
            // 64 divides 2^64: the low six bits of a uniform word are uniform.
            var word = generator.next()
            for _ in 0..<10 where characters.count < length {
                characters.append(Self.alphabet[Int(word & 63)])
                word >>= 6
            }
        }
        self.init(raw: String(characters))
    }

    /// The nonce whose raw value is `raw` (for example one issued by `POST /auth/apple/nonce`).
    public init(raw: String) {
        self.raw = raw
        self.hashed = Self.sha256Hex(raw)
    }

    /// Lower-case hex SHA-256 of the UTF-8 bytes of `text`.
    public static func sha256Hex(_ text: String) -> String {
        let hexDigits = Array("0123456789abcdef")
        var hex = ""
        hex.reserveCapacity(64)
        for byte in SHA256.hash(text.utf8) {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0f)])
        }
        return hex
    }
}
