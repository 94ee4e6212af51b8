import AccountStore
import AppleSignIn
import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The token a form of siwa's pages carries against cross-site request forgery (besides the `Origin` check that
/// ``CSRFCheck`` does): an HMAC of the browser's session id (and of what the form is about), under a key derived from
/// the data key for one purpose, so that every instance sharing the data key accepts it, a token from one session is
/// worth nothing in another, and a token of one purpose (the console's forms) is worth nothing for another (a consent).
/// It needs no storage; a session's tokens end with the session, and a data-key rotation ends every token issued
/// before it (a form on a page loaded earlier is refused with a message to reload).
struct FormToken: Sendable {
    /// What the forms protect; each purpose has a key of its own.
    enum Purpose: String, Sendable {
        /// The operator console's forms.
        case adminForms = "siwa admin form token v1"
        /// The OpenID consent page's form (bound to the client it allows).
        case clientConsent = "siwa client consent form token v1"
    }

    private let key: SymmetricKey

    /// - Parameters:
    ///   - dataKey: the data key that seals (only a derived key is kept).
    ///   - purpose: the forms the tokens are for.
    init(dataKey: SymmetricKey, purpose: Purpose) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: dataKey,
            info: Array(purpose.rawValue.utf8),
            outputByteCount: 32
        )
    }

    /// The token for the forms of `session`'s pages about `subject` (empty: the session's every form): base64url,
    /// 43 characters.
    func token(for session: SessionID, about subject: String = "") -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Self.message(session, subject), using: key)))
    }

    /// Whether `presented` is `session`'s token about `subject` (compared in constant time).
    func accepts(_ presented: String?, for session: SessionID, about subject: String = "") -> Bool {
        guard let presented, presented.utf8.count == 43, let bytes = Base64URL.decode(Array(presented.utf8)),
            bytes.count == 32
        else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(bytes, authenticating: Self.message(session, subject), using: key)
    }

    /// The session id, then the subject after a newline (neither can hold one).
    private static func message(_ session: SessionID, _ subject: String) -> [UInt8] {
        Array(session.description.utf8) + (subject.isEmpty ? [] : [0x0A] + Array(subject.utf8))
    }
}
