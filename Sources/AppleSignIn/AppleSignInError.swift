/// The one error type of `AppleSignIn`.
///
/// Each failure has a ``Code`` that names exactly what went wrong (which verification check, which Apple error, which
/// setting) and a short ``reason`` for people. Two errors are equal when their codes are equal, so tests and callers
/// match on the code: `#expect(throws: AppleSignInError.expired) { ... }`.
///
/// Reasons name claims, key ids, client ids and settings, never a token, a key or a secret.
public struct AppleSignInError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed. Compare codes with `==`; ``Code/category`` groups them.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: String, Sendable {
            case invalidConfiguration
            case malformed
            case algorithmNotAllowed
            case unknownKey
            case badSignature
            case issuerMismatch
            case audienceMismatch
            case expired
            case issuedInFuture
            case nonceMismatch
            case nonceMissing
            case keysUnavailable
            case invalidRequest
            case invalidClient
            case invalidGrant
            case unauthorizedClient
            case unsupportedGrantType
            case invalidScope
            case appleServerError
            case unexpectedResponse
            case transportFailed
            case timeout
            case subjectMismatch
            case userCancelledAuthorize
            case authorizationFailed
        }

        fileprivate let value: Value
        fileprivate init(_ value: Value) { self.value = value }

        /// A stable snake-free identifier such as `audienceMismatch`, fit for logs, metrics and JSON error codes.
        public var description: String { value.rawValue }

        /// A setting is missing or wrong; the reason names it and says how to fix it.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The token, JSON body or form is not well formed; the reason says which part.
        public static let malformed = Code(.malformed)
        /// The token's `alg` is not RS256 (`none`, HS256, ES256 and all others are refused before any key is used).
        public static let algorithmNotAllowed = Code(.algorithmNotAllowed)
        /// No key with the token's `kid` is in Apple's key set, even after a refetch.
        public static let unknownKey = Code(.unknownKey)
        /// The RS256 signature does not verify with the key named by `kid`.
        public static let badSignature = Code(.badSignature)
        /// `iss` is not Apple's issuer.
        public static let issuerMismatch = Code(.issuerMismatch)
        /// `aud` is not one of the configured client ids.
        public static let audienceMismatch = Code(.audienceMismatch)
        /// `exp` is in the past, beyond the leeway.
        public static let expired = Code(.expired)
        /// `iat` is in the future, beyond the leeway ("token used before issued").
        public static let issuedInFuture = Code(.issuedInFuture)
        /// `nonce` is neither the expected nonce nor its SHA-256 hex.
        public static let nonceMismatch = Code(.nonceMismatch)
        /// A nonce was expected but the token carries none.
        public static let nonceMissing = Code(.nonceMissing)
        /// Apple's key set could not be fetched and no keys are held.
        public static let keysUnavailable = Code(.keysUnavailable)
        /// Apple answered `invalid_request`.
        public static let invalidRequest = Code(.invalidRequest)
        /// Apple answered `invalid_client`: the client secret does not match the team, key or client.
        public static let invalidClient = Code(.invalidClient)
        /// Apple answered `invalid_grant`: the code or refresh token is expired, used or revoked.
        public static let invalidGrant = Code(.invalidGrant)
        /// Apple answered `unauthorized_client`.
        public static let unauthorizedClient = Code(.unauthorizedClient)
        /// Apple answered `unsupported_grant_type`.
        public static let unsupportedGrantType = Code(.unsupportedGrantType)
        /// Apple answered `invalid_scope`.
        public static let invalidScope = Code(.invalidScope)
        /// Apple answered with a 5xx status or throttled the call.
        public static let appleServerError = Code(.appleServerError)
        /// Apple's answer could not be understood (status, size or body).
        public static let unexpectedResponse = Code(.unexpectedResponse)
        /// The HTTP call failed before an answer arrived (connection refused, TLS, reset).
        public static let transportFailed = Code(.transportFailed)
        /// The HTTP call did not finish in time.
        public static let timeout = Code(.timeout)
        /// The `id_token` from a code exchange is for another user than the identity token presented.
        public static let subjectMismatch = Code(.subjectMismatch)
        /// The user pressed Cancel on Apple's page (`error=user_cancelled_authorize`).
        public static let userCancelledAuthorize = Code(.userCancelledAuthorize)
        /// Apple's web callback carried another `error`.
        public static let authorizationFailed = Code(.authorizationFailed)

        /// The family of a code.
        public var category: Category {
            switch value {
            case .invalidConfiguration: return .configuration
            case .malformed, .algorithmNotAllowed, .unknownKey, .badSignature, .issuerMismatch, .audienceMismatch,
                .expired, .issuedInFuture, .nonceMismatch, .nonceMissing, .subjectMismatch:
                return .verification
            case .invalidRequest, .invalidClient, .invalidGrant, .unauthorizedClient, .unsupportedGrantType,
                .invalidScope:
                return .appleRejected
            case .keysUnavailable, .appleServerError, .unexpectedResponse, .transportFailed, .timeout:
                return .appleUnavailable
            case .userCancelledAuthorize, .authorizationFailed:
                return .authorization
            }
        }
    }

    /// Families of codes: a caller usually decides on these (a verification failure is the client's fault, an
    /// unavailable Apple is nobody's and may be retried).
    public enum Category: Sendable, Hashable {
        /// Settings are wrong.
        case configuration
        /// A token, body or form failed a check: an expected outcome for bad input.
        case verification
        /// Apple refused the call (OAuth error).
        case appleRejected
        /// Apple could not be reached or answered nonsense.
        case appleUnavailable
        /// The user or Apple ended the web authorization.
        case authorization
    }

    /// What failed.
    public let code: Code
    /// A short explanation naming the claim, setting, key id or client id involved; never a secret.
    public let reason: String
    /// Apple's `error_description`, when Apple sent one.
    public let appleDescription: String?

    /// Makes an error.
    /// - Parameters:
    ///   - code: what failed.
    ///   - reason: a short explanation naming the claim, setting, key id or client id; never a secret.
    ///   - appleDescription: Apple's `error_description`, when Apple sent one.
    public init(_ code: Code, _ reason: String, appleDescription: String? = nil) {
        self.code = code
        self.reason = reason
        self.appleDescription = appleDescription
    }

    public var description: String { "\(code): \(reason)" }

    /// Whether two errors have the same code; reasons and Apple's descriptions are not compared.
    /// - Parameters:
    ///   - lhs: an error.
    ///   - rhs: another error.
    /// - Returns: `true` when their codes are equal.
    public static func == (lhs: AppleSignInError, rhs: AppleSignInError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code alone, as ``==(_:_:)`` compares it.
    /// - Parameter hasher: the hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    // Code-only values, for matching in tests and `catch` clauses.
    public static let malformed = AppleSignInError(.malformed, "")
    public static let algorithmNotAllowed = AppleSignInError(.algorithmNotAllowed, "")
    public static let unknownKey = AppleSignInError(.unknownKey, "")
    public static let badSignature = AppleSignInError(.badSignature, "")
    public static let issuerMismatch = AppleSignInError(.issuerMismatch, "")
    public static let expired = AppleSignInError(.expired, "")
    public static let issuedInFuture = AppleSignInError(.issuedInFuture, "")
    public static let nonceMismatch = AppleSignInError(.nonceMismatch, "")
    public static let nonceMissing = AppleSignInError(.nonceMissing, "")
    public static let keysUnavailable = AppleSignInError(.keysUnavailable, "")
    public static let invalidConfiguration = AppleSignInError(.invalidConfiguration, "")
    public static let invalidRequest = AppleSignInError(.invalidRequest, "")
    public static let invalidClient = AppleSignInError(.invalidClient, "")
    public static let invalidGrant = AppleSignInError(.invalidGrant, "")
    public static let unauthorizedClient = AppleSignInError(.unauthorizedClient, "")
    public static let unsupportedGrantType = AppleSignInError(.unsupportedGrantType, "")
    public static let invalidScope = AppleSignInError(.invalidScope, "")
    public static let appleServerError = AppleSignInError(.appleServerError, "")
    public static let unexpectedResponse = AppleSignInError(.unexpectedResponse, "")
    public static let transportFailed = AppleSignInError(.transportFailed, "")
    public static let timeout = AppleSignInError(.timeout, "")
    public static let subjectMismatch = AppleSignInError(.subjectMismatch, "")
    public static let userCancelledAuthorize = AppleSignInError(.userCancelledAuthorize, "")
    public static let authorizationFailed = AppleSignInError(.authorizationFailed, "")

    /// `aud` named a client id that is not configured; `got` is that audience.
    /// - Parameter got: the token's audience, quoted in the reason and cut to 255 characters.
    /// - Returns: an error with code ``Code/audienceMismatch``.
    public static func audienceMismatch(got: String) -> AppleSignInError {
        AppleSignInError(
            .audienceMismatch,
            "token audience \(LoggedText.quoted(got, limit: 255)) is not one of the configured client ids"
        )
    }

    /// A setting is wrong: `setting` names it, `fix` says what to do.
    /// - Parameters:
    ///   - setting: the setting's name, such as `teamID` or `bundleIDs[0]`.
    ///   - fix: what to do about it.
    /// - Returns: an error with code ``Code/invalidConfiguration`` and the reason `<setting>: <fix>`.
    public static func invalidConfiguration(_ setting: String, _ fix: String) -> AppleSignInError {
        AppleSignInError(.invalidConfiguration, "\(setting): \(fix)")
    }

    static func malformed(_ reason: String) -> AppleSignInError { AppleSignInError(.malformed, reason) }
}
