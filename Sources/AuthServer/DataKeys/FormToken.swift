import AccountStore
import AppleSignIn
import Crypto
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The token a form of siwa's pages carries against cross-site request forgery (besides the `Origin` check that
/// ``CSRFCheck`` does): an HMAC of the browser's session id (and of what the form is about), under a key derived from
/// a data key for one purpose, so that every instance sharing the data keys accepts it, a token from one session is
/// worth nothing in another, and a token of one purpose (the console's forms) is worth nothing for another (a consent).
/// It needs no storage; a session's tokens end with the session.
///
/// Tokens are made under the data key that seals now and accepted under any key of the ring as the sealer holds it
/// (re-read with the key file), so that instances which picked a data-key rotation up at different times accept each
/// other's forms: one that has not re-read the file yet refuses only forms made under the new key, until it does. A key
/// retired from the ring ends the tokens made under it (a form on a page loaded earlier is refused with a message to
/// reload).
final class FormToken: Sendable {
    /// What the forms protect; each purpose has a key of its own.
    enum Purpose: String, Sendable {
        /// The operator console's forms.
        case adminForms = "siwa admin form token v1"
        /// The OpenID consent page's form (bound to the client it allows).
        case clientConsent = "siwa client consent form token v1"
    }

    private let sealer: DataSealer
    private let purpose: Purpose
    /// The purpose's key derived from each data key of the ring, by key id (derived once, not per form).
    private let derived = Mutex<[DataKeyID: SymmetricKey]>([:])

    /// - Parameters:
    ///   - sealer: holds the data keys as they are now (only derived keys are kept here).
    ///   - purpose: the forms the tokens are for.
    init(sealer: DataSealer, purpose: Purpose) {
        self.sealer = sealer
        self.purpose = purpose
    }

    /// Tokens under one fixed data key.
    convenience init(dataKey: SymmetricKey, purpose: Purpose) {
        self.init(sealer: DataSealer(key: dataKey), purpose: purpose)
    }

    /// The purpose's key of `dataKey`; keys of data keys that left the ring are forgotten.
    private func key(of dataKey: DataKeyRing.Key, ring: DataKeyRing) -> SymmetricKey {
        derived.withLock { cache in
            if let key = cache[dataKey.id] { return key }
            let key = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: dataKey.key,
                info: Array(purpose.rawValue.utf8),
                outputByteCount: 32
            )
            cache = cache.filter { ring.key($0.key) != nil }
            cache[dataKey.id] = key
            return key
        }
    }

    /// The token for the forms of `session`'s pages about `subject` (empty: the session's every form): base64url,
    /// 43 characters.
    func token(for session: SessionID, about subject: String = "") -> String {
        let ring = sealer.keys
        let key = key(of: ring.primary, ring: ring)
        return Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Self.message(session, subject), using: key)))
    }

    /// Whether `presented` is `session`'s token about `subject` (compared in constant time).
    func accepts(_ presented: String?, for session: SessionID, about subject: String = "") -> Bool {
        guard let presented, presented.utf8.count == 43, let bytes = Base64URL.decode(Array(presented.utf8)),
            bytes.count == 32
        else { return false }
        let ring = sealer.keys
        let message = Self.message(session, subject)
        return ring.keys.contains { dataKey in
            HMAC<SHA256>.isValidAuthenticationCode(bytes, authenticating: message, using: key(of: dataKey, ring: ring))
        }
    }

    /// The session id, then the subject after a newline (neither can hold one).
    private static func message(_ session: SessionID, _ subject: String) -> [UInt8] {
        Array(session.description.utf8) + (subject.isEmpty ? [] : [0x0A] + Array(subject.utf8))
    }
}
