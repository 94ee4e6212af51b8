import AccountStore

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

    var tokenPrefix: String {
        switch self {
        case .canonical: ""
        case .serviceStack: "ss."
        case .vaporTutorial: "vt."
        case .rentManager: "rm."
        }
    }

    /// A new refresh token of this contract.
    func newRefreshToken() -> String {
        tokenPrefix + RefreshTokens.generate()
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
        }
    }
}
