/// An error of the siwa client. Tests and callers match on `code`; `==` compares codes only.
///
/// When the server answered, `status`, `serverCode` and `serverMessage` are its HTTP status and the `error` and
/// `message` fields of its JSON body (`{"error": "identity_token_expired", "message": "..."}`). Reasons never contain
/// a token.
public struct SiwaClientError: Error, Equatable, CustomStringConvertible {
    /// What went wrong, in kinds a caller acts on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case notSignedIn
            case server
            case invalidResponse
            case transport
            case tokenStore
            case missingIdentityToken
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// No session: never signed in, signed out, or the server ended the session (the refresh token was revoked,
        /// reused or expired). Show the sign-in screen.
        public static let notSignedIn = Code(.notSignedIn)
        /// The server answered with an error status; see `status`, `serverCode` and `serverMessage`.
        public static let server = Code(.server)
        /// The server's answer could not be read (not HTTP, or not the expected JSON).
        public static let invalidResponse = Code(.invalidResponse)
        /// The request did not reach the server or its answer was lost (offline, refused, timed out).
        public static let transport = Code(.transport)
        /// The token store could not be read or written.
        public static let tokenStore = Code(.tokenStore)
        /// The Apple credential has no identity token.
        public static let missingIdentityToken = Code(.missingIdentityToken)

        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// A short explanation, without secrets.
    public let reason: String
    /// The HTTP status, when the server answered.
    public let status: Int?
    /// The server's stable `error` code (`"invalid_token"`, `"refresh_token_reused"`, …), when it sent one.
    public let serverCode: String?
    /// The server's human-readable `message`, when it sent one.
    public let serverMessage: String?
    /// The error that caused this one (a `URLError`, a decoding or file error).
    public let underlying: (any Error)?

    /// Creates an error.
    /// - Parameters:
    ///   - code: the kind of failure.
    ///   - reason: a short explanation, without secrets.
    ///   - status: the HTTP status, when the server answered.
    ///   - serverCode: the server's `error` field.
    ///   - serverMessage: the server's `message` field.
    ///   - underlying: the error that caused this one.
    public init(
        _ code: Code,
        _ reason: String,
        status: Int? = nil,
        serverCode: String? = nil,
        serverMessage: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.reason = reason
        self.status = status
        self.serverCode = serverCode
        self.serverMessage = serverMessage
        self.underlying = underlying
    }

    public static func == (lhs: SiwaClientError, rhs: SiwaClientError) -> Bool {
        lhs.code == rhs.code
    }

    public var description: String {
        var text = "SiwaClientError.\(code): \(reason)"
        if let status { text += " (HTTP \(status)" + (serverCode.map { " \($0)" } ?? "") + ")" }
        if let underlying { text += " [\(underlying)]" }
        return text
    }
}
