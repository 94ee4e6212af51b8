import AccountStore
import AppleSignIn
import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The token every console form carries against cross-site request forgery (besides the `Origin` check that
/// ``CSRFCheck`` does): an HMAC of the admin's session id, under a key derived from the data key, so that every
/// instance sharing the data key accepts it and a token from one session is worth nothing in another. It needs no
/// storage; a session's tokens end with the session, and a data-key rotation ends every token issued before it (a form
/// on a page loaded earlier is refused with a message to reload).
struct AdminFormToken: Sendable {
    private let key: SymmetricKey

    /// - Parameter dataKey: the data key that seals (only a derived key is kept).
    init(dataKey: SymmetricKey) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: dataKey,
            info: Array("siwa admin form token v1".utf8),
            outputByteCount: 32
        )
    }

    /// The token for the forms of `session`'s pages: base64url, 43 characters.
    func token(for session: SessionID) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Array(session.description.utf8), using: key)))
    }

    /// Whether `presented` is `session`'s token (compared in constant time).
    func accepts(_ presented: String?, for session: SessionID) -> Bool {
        guard let presented, presented.utf8.count == 43, let bytes = Base64URL.decode(Array(presented.utf8)),
            bytes.count == 32
        else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(
            bytes,
            authenticating: Array(session.description.utf8),
            using: key
        )
    }
}
