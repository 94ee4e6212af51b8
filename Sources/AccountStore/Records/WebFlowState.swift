#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A web sign-in between the redirect to Apple and Apple's `form_post` callback, kept server-side so that any
/// instance can finish it (a SameSite cookie is not sent on Apple's cross-site POST).
public struct WebFlowState: Sendable, Hashable {
    /// SHA-256 of the `state` parameter sent to Apple (the state itself is never stored).
    public var stateHash: [UInt8]
    /// The nonce sent to Apple; the callback's identity token must carry it.
    public var nonce: String
    /// Where the browser goes after signing in: a relative path, an allow-listed origin, or `android:<package>`.
    public var returnURL: String
    public var createdAt: Date
    public var expiresAt: Date

    public init(stateHash: [UInt8], nonce: String, returnURL: String, createdAt: Date, expiresAt: Date) {
        self.stateHash = stateHash
        self.nonce = nonce
        self.returnURL = returnURL
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The outcome of ``AccountStore/consumeWebFlowState(stateHash:now:)``.
public enum WebFlowStateOutcome: Sendable, Hashable {
    /// The state was pending: it is now used up.
    case consumed(WebFlowState)
    /// The state was already used by an earlier callback (a replay or a double submit).
    case alreadyUsed
    /// The state is past its expiry.
    case expired
    /// No such state.
    case notFound
}
