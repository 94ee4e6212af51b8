#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Every check of an identity token or notification payload run one by one, for people debugging a token
/// (`siwa verify`): unlike ``IdentityTokenVerifier/verify(_:expectedNonce:)``, it does not stop at the first failure.
public struct TokenInspection: Sendable {
    /// One check and how it went.
    public struct Check: Sendable {
        /// ``IdentityTokenVerifier/identityTokenCheckNames`` or ``IdentityTokenVerifier/notificationCheckNames``:
        /// `structure`, `algorithm`, `key`, `signature`, `payload`, `issuer`, `audience`, `expiry`, `issued-at`, then
        /// `claims` (an identity token's typed claims and nonce) or `event` (a notification's).
        public let name: String
        /// What passed (a short detail), or the error that failed it.
        public let outcome: Result<String, AppleSignInError>

        public var passed: Bool {
            if case .success = outcome { return true }
            return false
        }
    }

    /// The header's JSON as sent, when it decoded.
    public let headerJSON: String?
    /// The claims' JSON as sent, when they decoded.
    public let claimsJSON: String?
    /// Whether the payload is a server-to-server notification (it has an `events` claim).
    public let isNotification: Bool
    /// The checks in order.
    public let checks: [Check]

    /// Whether every check passed.
    public var passed: Bool { checks.allSatisfy(\.passed) }
}

extension IdentityTokenVerifier {
    /// Runs every check on `token` separately and reports each: the same list of checks as
    /// ``verify(_:expectedNonce:)`` (or ``verifyNotification(payload:)`` for a payload with an `events` claim), so a
    /// check that verification runs is reported here too.
    /// - Parameters:
    ///   - token: an identity token or the `payload` of a notification.
    ///   - expectedNonce: the raw nonce to compare, if any.
    /// - Returns: every check's outcome in order, with the header's and claims' JSON when they decoded; checks past a
    ///   failed structure or payload check are not run.
    public func inspect(_ token: String, expectedNonce: String? = nil) async -> TokenInspection {
        let context = checkContext(describes: true, expectedNonce: expectedNonce)
        let common = await AppleJWTCheck.inspect(token, AppleJWTCheck.common, context: context)
        var progress = common.progress
        var checks = common.results
        let isNotification = progress.claims?["events"] != nil
        // Past a failed structure or payload check there are no claims to read further.
        if progress.claims != nil {
            let last = isNotification ? AppleJWTCheck.notification : AppleJWTCheck.identityToken
            do {
                checks.append(.init(name: last.name, outcome: .success(try await last(&progress, context))))
            } catch {
                checks.append(.init(name: last.name, outcome: .failure(error)))
            }
        }
        return TokenInspection(
            headerJSON: progress.parts.map { String(decoding: $0.headerBytes, as: UTF8.self) },
            claimsJSON: progress.parts.map { String(decoding: $0.payload, as: UTF8.self) },
            isNotification: isNotification,
            checks: checks
        )
    }
}
