/// Tells Apple's private relay addresses ("Hide My Email") from shared ones.
public enum PrivateRelayEmail {
    /// The domains Apple's relay addresses use: `privaterelay.appleid.com`, and `private.icloud.com` announced in 2026.
    public static let domains = ["privaterelay.appleid.com", "private.icloud.com"]

    /// Whether `email` is a relay address. `claim` (the token's `is_private_email`) wins when present; the domain is
    /// the fallback for sources without the claim.
    /// - Parameters:
    ///   - email: the address.
    ///   - claim: `is_private_email`, or `nil` when the source has none.
    /// - Returns: the claim when present; else whether the address's domain is one of ``domains`` (case ignored).
    public static func isPrivateRelay(email: String, claim: Bool?) -> Bool {
        if let claim { return claim }
        guard let at = email.lastIndex(of: "@") else { return false }
        let domain = email[email.index(after: at)...].lowercased()
        return domains.contains(domain)
    }
}
