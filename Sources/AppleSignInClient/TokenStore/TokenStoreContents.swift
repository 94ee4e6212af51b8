public import Foundation

/// Everything a `TokenStore` holds: siwa's tokens, and the names and emails Apple shared on first sign-ins until an
/// account on the server holds them.
public struct TokenStoreContents: Codable, Sendable, Equatable {
    /// The current session's tokens; nil when signed out.
    public var tokens: SessionTokens?
    /// Apple's first-time profiles, one per Apple ID, each kept until the server has answered a sign-in of that
    /// Apple ID with an account. Oldest first; at most `maximumPendingProfiles`.
    public var pendingProfiles: [FirstSignInProfile]

    /// How many first-time profiles are kept (several people may try to sign in on one device while the server is
    /// unreachable); the oldest is dropped first.
    public static let maximumPendingProfiles = 8

    /// Nothing stored.
    public static let empty = TokenStoreContents()

    /// Creates contents.
    public init(tokens: SessionTokens? = nil, pendingProfiles: [FirstSignInProfile] = []) {
        self.tokens = tokens
        self.pendingProfiles = pendingProfiles
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.tokens = try container.decodeIfPresent(SessionTokens.self, forKey: .tokens)
        self.pendingProfiles = try container.decodeIfPresent([FirstSignInProfile].self, forKey: .pendingProfiles) ?? []
    }

    /// The first-time profile of the Apple user `appleUserID`, if one is kept.
    public func pendingProfile(appleUserID: String?) -> FirstSignInProfile? {
        pendingProfiles.last { $0.appleUserID == appleUserID }
    }

    /// Keeps `profile`, merged over an earlier one of the same Apple ID.
    mutating func keep(_ profile: FirstSignInProfile) {
        var merged = profile
        if let earlier = pendingProfile(appleUserID: profile.appleUserID) {
            merged.givenName = profile.givenName ?? earlier.givenName
            merged.familyName = profile.familyName ?? earlier.familyName
            merged.email = profile.email ?? earlier.email
        }
        pendingProfiles.removeAll { $0.appleUserID == profile.appleUserID }
        pendingProfiles.append(merged)
        if pendingProfiles.count > Self.maximumPendingProfiles {
            pendingProfiles.removeFirst(pendingProfiles.count - Self.maximumPendingProfiles)
        }
    }

    /// Forgets the first-time profile of `appleUserID` (the server has the account).
    mutating func forgetProfile(appleUserID: String?) {
        pendingProfiles.removeAll { $0.appleUserID == appleUserID }
    }

    /// The JSON that file and Keychain stores keep.
    public func encoded() throws -> Data {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try encoder.encode(self)
        } catch {
            throw SiwaClientError(.tokenStore, "could not encode the token store contents", underlying: error)
        }
    }

    /// Reads what `encoded()` wrote.
    /// - Throws: `SiwaClientError` with code `.tokenStore` when `data` is not such JSON.
    public static func decode(_ data: Data) throws -> TokenStoreContents {
        do {
            return try JSONDecoder().decode(TokenStoreContents.self, from: data)
        } catch {
            throw SiwaClientError(.tokenStore, "the stored tokens are not readable", underlying: error)
        }
    }
}
