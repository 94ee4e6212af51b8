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
        if let spelled = Hex.decode(claim), spelled.count == SHA256.byteCount { hashes.append(spelled) }
        return hashes
    }
}
