/// A fault injected into one endpoint (`POST /emulator/faults`).
struct EmulatorFault: Codable {
    /// The endpoints a fault can be injected into: `/auth/keys`, `/auth/token` and `/auth/revoke`.
    static let endpoints = ["keys", "token", "revoke"]

    enum Mode: String, Codable {
        /// Answer 500.
        case error
        /// Hold the request past any sensible client timeout.
        case timeout
        /// Remove the fault.
        case off
    }

    var mode: Mode
    /// How many calls are still to fail; `nil` for all until turned off.
    var remaining: Int?
}
