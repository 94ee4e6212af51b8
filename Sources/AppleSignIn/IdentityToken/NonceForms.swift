import Crypto

/// The two forms a nonce takes in an identity token, in one place: apps pass Apple either the raw nonce or its
/// SHA-256 as lower-case hex (Apple's sample code does the latter), and the token carries whichever Apple was given.
public enum NonceForms {
    /// Whether a token's `nonce` claim is `raw`, or its SHA-256 hex (case ignored), compared in constant time.
    /// - Parameters:
    ///   - claim: the token's `nonce`.
    ///   - raw: the nonce the server issued, before any hashing.
    /// - Returns: `true` when `claim` is either form of `raw`.
    public static func matches(claim: String, raw: String) -> Bool {
        // Raw first; the SHA-256 hex form is computed only when the raw form does not match. Both compare the
        // strings' bytes where they are, without copying either into an array (two allocations per sign-in).
        if constantTimeEquals(claim, raw) { return true }
        var raw = raw
        let digest = raw.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        let claimBytes = claim.utf8
        guard claimBytes.count == SHA256.byteCount * 2 else { return false }
        return digest.withUnsafeBytes { digest in
            var difference: UInt8 = 0
            var digits = claimBytes.makeIterator()
            for byte in digest {
                difference |= asciiLowercased(digits.next() ?? 0) ^ Hex.digits[Int(byte >> 4)]
                difference |= asciiLowercased(digits.next() ?? 0) ^ Hex.digits[Int(byte & 0x0F)]
            }
            return difference == 0
        }
    }

    /// `byte` with A–Z mapped to a–z; the claim is compared with lower-case hex digits, ignoring case.
    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// The SHA-256 of the raw nonce a token's `nonce` claim may stand for, for looking up a server nonce kept only as
    /// its hash: the hash of the claim itself (the app passed the raw nonce), and, when the claim is 64 hex digits,
    /// the bytes they spell (the app passed the SHA-256 hex).
    /// - Parameter claim: the token's `nonce`.
    /// - Returns: one or two 32-byte hashes; a stored nonce hash equal to any of them matches.
    public static func rawNonceHashes(claim: String) -> [[UInt8]] {
        var hashes = [Array(SHA256.hash(data: Array(claim.utf8)))]
        if let spelled = Hex.decode(claim), spelled.count == SHA256.byteCount { hashes.append(spelled) }
        return hashes
    }
}
