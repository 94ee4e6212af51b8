import HTTPTypes
public import Logging

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Apple's key set over HTTP: `GET <base>/auth/keys`, with `Cache-Control: max-age` honoured.
public struct AppleKeysEndpoint: AppleKeySource {
    private let baseURL: AppleBaseURL
    private let transport: any HTTPTransport
    private let retryPolicy: RetryPolicy
    private let logger: Logger

    /// Makes the source.
    /// - Parameters:
    ///   - baseURL: Apple, or the emulator.
    ///   - transport: the HTTP client.
    ///   - retryPolicy: retries and per-attempt timeout (two attempts of 5 s by default).
    ///   - logger: debug-level events (retries); never token contents.
    public init(
        baseURL: AppleBaseURL,
        transport: any HTTPTransport,
        retryPolicy: RetryPolicy = RetryPolicy(maximumAttempts: 2, timeout: .seconds(5)),
        logger: Logger = Logger(label: "siwa.apple-keys")
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.logger = logger
    }

    /// Fetches `GET <base>/auth/keys`, retried per the retry policy on timeouts, transport failures, 5xx and 429.
    /// - Returns: the parsed key set, and the `max-age` of `Cache-Control` (0 for `no-cache` or `no-store`, `nil`
    ///   when there is none).
    /// - Throws: ``AppleSignInError``: ``AppleSignInError/Code/timeout`` or ``AppleSignInError/Code/transportFailed``
    ///   when no answer came, ``AppleSignInError/Code/appleServerError`` for a 5xx or 429 after the retries, the
    ///   error Apple's answer names for any other status (``AppleSignInError/Code/unexpectedResponse`` when it names
    ///   none), and ``AppleSignInError/Code/unexpectedResponse`` for a body that holds no usable key.
    public func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
        var request = HTTPRequest(
            method: .get,
            scheme: baseURL.scheme,
            authority: baseURL.authority,
            path: baseURL.pathPrefix + "/auth/keys"
        )
        request.headerFields[.accept] = "application/json"
        let answer = try await AppleHTTP.send(
            request,
            body: nil,
            transport: transport,
            retry: retryPolicy,
            timeout: retryPolicy.timeout,
            logger: logger
        )
        guard answer.response.status == .ok else {
            throw AppleHTTP.error(from: answer, path: "/auth/keys", clientID: nil)
        }
        return (try AppleKeySet(jwks: answer.body), Self.maxAge(answer.response.headerFields[.cacheControl]))
    }

    /// The `max-age` of a `Cache-Control` value; `no-cache` and `no-store` count as 0.
    static func maxAge(_ cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let trimmed = directive.trimmingPrefix(while: { $0 == " " }).lowercased()
            if trimmed == "no-cache" || trimmed == "no-store" { return 0 }
            if trimmed.hasPrefix("max-age="), let seconds = Int(trimmed.dropFirst("max-age=".count)), seconds >= 0 {
                return TimeInterval(seconds)
            }
        }
        return nil
    }
}
