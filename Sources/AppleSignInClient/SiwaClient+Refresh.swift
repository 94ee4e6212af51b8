import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SiwaClient {
    /// Told to requests that waited for a refresh whose caller was cancelled: they try again themselves.
    private struct AbandonedRefresh: Error {}

    /// Tokens to retry with after `rejected` got a 401: the stored ones if they already changed, else the outcome of
    /// the refresh in progress, else of a new refresh this call runs.
    ///
    /// The refresh is shared without an unstructured task: the first caller runs it and resumes the others.
    func refreshedTokens(replacing rejected: SessionTokens) async throws -> SessionTokens {
        while true {
            guard let current = try loadContents().tokens else {
                throw SiwaClientError(.notSignedIn, "the session has ended")
            }
            if current.accessToken != rejected.accessToken {
                return current  // already refreshed (or signed in again) since the request left
            }
            guard refreshWaiters != nil else { return try await runRefresh(current) }
            do {
                return try await withCheckedThrowingContinuation { refreshWaiters?.append($0) }
            } catch is AbandonedRefresh {
                continue
            }
        }
    }

    /// Runs one refresh and gives its outcome to every request that joined meanwhile.
    private func runRefresh(_ tokens: SessionTokens) async throws -> SessionTokens {
        refreshWaiters = []
        let outcome: Result<SessionTokens, any Error>
        do {
            outcome = .success(try await exchange(tokens))
        } catch {
            outcome = .failure(error)
        }
        let waiters = refreshWaiters ?? []
        refreshWaiters = nil
        // A cancelled caller's outcome says nothing about the session: the others try again.
        let shared: Result<SessionTokens, any Error> =
            Task.isCancelled && (try? outcome.get()) == nil ? .failure(AbandonedRefresh()) : outcome
        for waiter in waiters { waiter.resume(with: shared) }
        return try outcome.get()
    }

    /// `POST /auth/refresh`: stores the rotated tokens, or clears the session when the server refuses.
    private func exchange(_ tokens: SessionTokens) async throws -> SessionTokens {
        let request = try jsonRequest("auth/refresh", body: RefreshTokenBody(refreshToken: tokens.refreshToken))
        let (data, response) = try await deliver(request)
        switch response.statusCode {
        case 200:
            let answer = try WireCoding.decode(TokenAnswer.self, from: data, status: response.statusCode)
            let fresh = SessionTokens(accessToken: answer.accessToken, refreshToken: answer.refreshToken)
            var stored = try loadContents()
            if stored.tokens == tokens {  // not signed out or in again meanwhile
                stored.tokens = fresh
                try save(stored)
            }
            return fresh
        case 400, 401, 403:
            let refused = WireCoding.serverError(data, response)
            var stored = try loadContents()
            if stored.tokens == tokens {
                stored.tokens = nil
                try save(stored)
            }
            throw SiwaClientError(
                .notSignedIn,
                "the server ended the session; sign in again",
                status: refused.status,
                serverCode: refused.serverCode,
                serverMessage: refused.serverMessage
            )
        default:
            throw WireCoding.serverError(data, response)
        }
    }
}
