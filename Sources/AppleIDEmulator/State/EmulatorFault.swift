/// A fault injected into one endpoint (`POST /emulator/faults`).
struct EmulatorFault: Codable {
    /// The endpoints a fault can be injected into: `/auth/keys`, `/auth/token` and `/auth/revoke`.
    static let endpoints = ["keys", "token", "revoke"]

    enum Mode: String, Codable {
        /// Answer 500.
        case error
        /// Hold the request past any sensible client timeout.
        case timeout
        /// `/auth/revoke` only: answer 200 and revoke nothing. Apple answers 200 to anything it is sent, a token it
        /// does not know included, so a client cannot tell a revocation that took from one that did not.
        case ignore
        /// Answer `invalid_client`, as Apple answers every call once the team's key is revoked in the developer portal.
        case invalidClient = "invalid_client"
        /// Remove the fault.
        case off
    }

    /// The endpoints a mode applies to.
    static func endpoints(for mode: Mode) -> [String] {
        switch mode {
        case .ignore: ["revoke"]
        // The key set takes no client authentication.
        case .invalidClient: ["token", "revoke"]
        case .error, .timeout, .off: endpoints
        }
    }

    var mode: Mode
    /// How many calls are still to fail; `nil` for all until turned off.
    var remaining: Int?
}
