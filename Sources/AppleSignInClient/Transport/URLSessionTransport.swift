public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The live transport: a `URLSession`.
public struct URLSessionTransport: SiwaClientTransport {
    /// The session requests go through.
    public let session: URLSession

    /// A transport over `session` (by default `URLSession.shared`).
    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw SiwaClientError(.invalidResponse, "the answer is not an HTTP response")
        }
        return (data, http)
    }
}
