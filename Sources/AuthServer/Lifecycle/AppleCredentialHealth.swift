public import AppleSignIn
public import Logging
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Whether Apple accepts siwa's client secret, from the answers to every Apple call the server makes (code exchange,
/// refresh-token validation, revocation, team transfer).
///
/// A `.p8` key revoked in the developer portal (or a wrong key id or team id) makes each of those calls fail with
/// `invalid_client` while sign-ins still verify, so nothing else shows it until an account cannot be deleted. The
/// first `invalid_client` for a client id raises this state at once: the metric, one error log line saying what to
/// do, the `/readyz` detail and the console's banner. It stays raised until Apple accepts a call for that client id
/// again (a success, or `invalid_grant`, which Apple answers only after accepting the client); then one notice line.
public final class AppleCredentialHealth: AppleAPICallObserver {
    /// Apple's first refusal of one client id's secret.
    public struct Refusal: Sendable, Equatable {
        /// The call Apple refused.
        public let call: AppleAPIAnswer.Call
        /// The client id whose secret was refused.
        public let clientID: ClientID
        /// When Apple first refused it (since the last success).
        public let since: Date
    }

    private let metrics: ServerMetrics?
    private let clock: any WallClock
    private let logger: Logger
    /// The client ids Apple refuses now, with their first refusal.
    private let refusals = Mutex<[ClientID: Refusal]>([:])

    /// - Parameters:
    ///   - metrics: where the gauge and the `invalid_client` counter go, if metrics are kept.
    ///   - clock: when a refusal happened.
    ///   - logger: the one error line at raising and the notice at clearing.
    public init(metrics: ServerMetrics?, clock: any WallClock, logger: Logger) {
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// The refusals in force, the earliest first; empty while Apple accepts every client id it was last asked about.
    public var failing: [Refusal] {
        refusals.withLock { Array($0.values) }.sorted {
            ($0.since, $0.clientID.rawValue) < ($1.since, $1.clientID.rawValue)
        }
    }

    /// Whether Apple refuses siwa's client secret for any client id now.
    public var isFailing: Bool { refusals.withLock { !$0.isEmpty } }

    /// Records one of Apple's answers: raises on `invalid_client`, clears the client id on an accepted secret.
    /// - Parameter answer: the call, its client id and outcome.
    public func observe(_ answer: AppleAPIAnswer) {
        metrics?.appleCall(
            answer.call,
            outcome: answer.error.map { AuthServerError.snakeCase($0.code.description) } ?? "ok",
            duration: answer.duration
        )
        switch answer.clientAuthentication {
        case .undetermined:
            return
        case .refused:
            metrics?.appleInvalidClient(call: answer.call)
            let refusal = Refusal(call: answer.call, clientID: answer.clientID, since: clock.now)
            let raised = refusals.withLock { refusals in
                guard refusals[answer.clientID] == nil else { return false }
                refusals[answer.clientID] = refusal
                return refusals.count == 1
            }
            guard raised else { return }
            metrics?.appleCredentials(failing: true)
            logger.error(
                """
                Apple refuses siwa's client secret (invalid_client): code exchanges, token validations and \
                revocations fail until it is fixed; check SIWA_KEY_ID and the .p8 key (a key revoked or deleted \
                under Keys in the Apple developer portal fails this way) and SIWA_TEAM_ID, then run \
                `siwa doctor --apple`
                """,
                metadata: ["call": "\(answer.call.rawValue)", "client_id": "\(answer.clientID)"]
            )
        case .accepted:
            let cleared = refusals.withLock { refusals in
                guard refusals.removeValue(forKey: answer.clientID) != nil else { return false }
                return refusals.isEmpty
            }
            guard cleared else { return }
            metrics?.appleCredentials(failing: false)
            logger.notice(
                "Apple accepts siwa's client secret again",
                metadata: ["call": "\(answer.call.rawValue)", "client_id": "\(answer.clientID)"]
            )
        }
    }
}
