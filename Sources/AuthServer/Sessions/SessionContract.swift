import AccountStore
import AppleSignIn
import Crypto

/// The client contract a session's refresh tokens belong to: siwa's own routes (native and web, rotating) or one of
/// the tutorials' contracts (non-rotating, on their own routes only).
///
/// The contract is written into the token itself as a prefix (`ss.`, `vt.`, `rm.`; none for siwa's own): the store
/// keeps only the SHA-256 of the whole token, so a changed prefix is an unknown token, and no schema change was
/// needed. siwa's own tokens are base64url, which has no `.`, so a prefix cannot be confused with a token.
public enum SessionContract: String, Sendable, CaseIterable {
    /// `POST /auth/apple/native`, the web flow, `POST /auth/refresh`: tokens rotate on every use.
    case canonical
    /// ServiceStack's `Authenticate` and `GetAccessToken`: the refresh token is kept and presented many times.
    case serviceStack
    /// The Vapor tutorial's long-lived opaque bearer (`POST /api/auth/siwa`, `GET /api/users/me`).
    case vaporTutorial
    /// RentManager's `POST /api/auth/apple` and `POST /api/auth/refresh`.
    case rentManager
    /// The OpenID provider's `POST /oauth/token`: rotating like siwa's own, and bound to one relying party and the
    /// scope it was granted (``binding(of:)``).
    case openID

    var tokenPrefix: String {
        switch self {
        case .canonical: ""
        case .serviceStack: "ss."
        case .vaporTutorial: "vt."
        case .rentManager: "rm."
        case .openID: "op."
        }
    }

    /// A new refresh token of this contract; with `binding` (the OpenID client and scope), the binding is written into
    /// the token between the prefix and the random part (base64url, then `.`), where the token's hash covers it.
    func newRefreshToken(binding: String? = nil) -> String {
        token(binding: binding, random: RefreshTokens.generate())
    }

    /// The token that replaces `presented` at rotation, in this contract's form: the same for every presentation of
    /// one token (``RefreshTokens/successor(of:key:)``).
    func successorToken(of presented: String, binding: String? = nil, key: SymmetricKey) -> String {
        token(binding: binding, random: RefreshTokens.successor(of: presented, key: key))
    }

    /// The contract's prefix, the binding (base64url, then a dot) when there is one, and the random part.
    private func token(binding: String?, random: String) -> String {
        tokenPrefix + (binding.map { Base64URL.encode(Array($0.utf8)) + "." } ?? "") + random
    }

    /// The binding written into a token by ``newRefreshToken(binding:)``, or `nil` when it has none. A token whose
    /// binding was changed is an unknown token (its hash differs).
    static func binding(of token: String) -> String? {
        let contract = of(token)
        guard contract != .canonical else { return nil }
        let rest = token.dropFirst(contract.tokenPrefix.count)
        guard let dot = rest.firstIndex(of: "."), let bytes = Base64URL.decode(String(rest[..<dot])) else {
            return nil
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The contract that issued `token`, read from its prefix.
    static func of(_ token: String) -> SessionContract {
        for contract in allCases where !contract.tokenPrefix.isEmpty && token.hasPrefix(contract.tokenPrefix) {
            return contract
        }
        return .canonical
    }

    /// What the contract is called in error messages.
    var displayName: String {
        switch self {
        case .canonical: "siwa's own routes"
        case .serviceStack: "the ServiceStack routes"
        case .vaporTutorial: "the Vapor tutorial's routes"
        case .rentManager: "the RentManager routes"
        case .openID: "the OpenID provider's token endpoint"
        }
    }
}

extension SessionContract {
    /// The channel a sign-in came through, for the console and the audit log: a contract's own, or for siwa's own
    /// routes the flow (native or web).
    func channel(_ flow: ServerMetrics.SignInFlow) -> SignInChannel {
        switch self {
        case .canonical: flow == .web ? .web : .native
        case .serviceStack: .serviceStack
        case .vaporTutorial: .vaporTutorial
        case .rentManager: .rentManager
        case .openID: SignInChannel(rawValue: "oidc")
        }
    }
}
