public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The HTTP client a `SiwaClient` sends through: `URLSessionTransport` in apps, a recording wrapper in tests.
///
/// A transport sends the request as given (the client has already added the bearer token) and returns any HTTP
/// answer, error statuses included; it throws only when no answer arrived.
public protocol SiwaClientTransport: Sendable {
    /// Sends `request` and returns the body and the HTTP response.
    /// - Throws: when no HTTP answer arrived (offline, refused, timed out, cancelled).
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}
