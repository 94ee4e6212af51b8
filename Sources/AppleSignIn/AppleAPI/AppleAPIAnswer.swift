/// What Apple answered one call of ``AppleAPIClient``, for an ``AppleAPICallObserver``.
///
/// It carries the client id, the call and the error code, never the request's secret or tokens.
public struct AppleAPIAnswer: Sendable {
    /// Which call of the REST API was answered.
    public enum Call: String, Sendable, CaseIterable {
        /// `grant_type=authorization_code` at `/auth/token`.
        case exchange
        /// `grant_type=refresh_token` at `/auth/token`.
        case validate
        /// `/auth/revoke`.
        case revoke
        /// Team transfer: `grant_type=client_credentials` and `/auth/usermigrationinfo`.
        case migration
    }

    /// What the answer says of the client secret.
    public enum ClientAuthentication: Sendable, Equatable {
        /// Apple accepted it: a success, or `invalid_grant` (Apple checks the client before the grant).
        case accepted
        /// Apple refused it: `invalid_client`.
        case refused
        /// The answer does not tell (a 5xx, a malformed request, an unexpected answer).
        case undetermined
    }

    /// The call answered.
    public let call: Call
    /// The client id the call was made for.
    public let clientID: ClientID
    /// The error the answer became, `nil` for a success.
    public let error: AppleSignInError?
    /// Apple's `Date` header as sent, for comparing clocks; `nil` when no answer came.
    public let date: String?
    /// From the first attempt to the answer (or to giving up), retries included; `nil` when not measured.
    public let duration: Duration?

    /// - Parameters:
    ///   - call: the call answered.
    ///   - clientID: the client id it was made for.
    ///   - error: the error the answer became, `nil` for a success.
    ///   - date: Apple's `Date` header.
    ///   - duration: how long the call took, retries included.
    public init(call: Call, clientID: ClientID, error: AppleSignInError?, date: String?, duration: Duration? = nil) {
        self.call = call
        self.clientID = clientID
        self.error = error
        self.date = date
        self.duration = duration
    }

    /// Whether Apple accepted the client secret, as far as this answer tells.
    public var clientAuthentication: ClientAuthentication {
        guard let code = error?.code else { return .accepted }
        if code == .invalidGrant { return .accepted }
        return code == .invalidClient ? .refused : .undetermined
    }
}

/// Watches Apple's answers to an ``AppleAPIClient``: a server keeps the health of its Apple credentials from them,
/// `siwa doctor` Apple's clock.
///
/// Called once per call, after its retries: with Apple's answer, or with the error when no answer came (a timeout, a
/// transport failure), whose ``AppleAPIAnswer/clientAuthentication`` is then undetermined.
public protocol AppleAPICallObserver: Sendable {
    /// One answer; called on the calling task, so it should be quick.
    /// - Parameter answer: the call, its client id and its outcome.
    func observe(_ answer: AppleAPIAnswer)
}
