public import Crypto

/// The two forms a nonce takes in an identity token, in one place: apps pass Apple either the raw nonce or its
/// SHA-256 as lower-case hex (Apple's sample code does the latter), and the token carries whichever Apple was given.
public enum NonceForms {
    /// Whether a token's `nonce` claim is `raw`, or its SHA-256 hex (case ignored), compared in constant time.
    public static func matches(claim: String, raw: String) -> Bool {
        let rawBytes = Array(raw.utf8)
        // Raw first; the SHA-256 hex form is computed only when the raw form does not match.
        return constantTimeEquals(Array(claim.utf8), rawBytes)
            || constantTimeEquals(Array(claim.lowercased().utf8), Array(SHA256.hash(data: rawBytes).hexString.utf8))
    }

    /// The SHA-256 of the raw nonce a token's `nonce` claim may stand for, for looking up a server nonce kept only as
    /// its hash: the hash of the claim itself (the app passed the raw nonce), and, when the claim is 64 hex digits,
    /// the bytes they spell (the app passed the SHA-256 hex).
    public static func rawNonceHashes(claim: String) -> [[UInt8]] {
        var hashes = [Array(SHA256.hash(data: Array(claim.utf8)))]
        if let spelled = hexBytes(claim), spelled.count == SHA256.byteCount { hashes.append(spelled) }
        return hashes
    }

    /// The bytes of a hex string (either case), or `nil`.
    static func hexBytes(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = hexValue(characters[index]), let low = hexValue(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
