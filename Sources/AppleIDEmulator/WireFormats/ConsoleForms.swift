import Foundation

/// `POST /console/native-sign-in`: the console's sign-in form (`application/x-www-form-urlencoded`). Empty fields
/// count as absent.
struct ConsoleSignInForm: Decodable {
    var clientId: String?
    var email: String?
    var givenName: String?
    var familyName: String?
    /// `true` when the Hide My Email box is ticked.
    var hideEmail: String?
    var nonce: String?

    /// The control API's request for the same sign-in.
    /// - Throws: `AppleOAuthError` when the client id or email is missing.
    func request() throws(AppleOAuthError) -> NativeSignInRequest {
        guard let clientId = Self.present(clientId) else { throw .invalidRequest("a client id is required") }
        guard let email = Self.present(email) else { throw .invalidRequest("an Apple ID email is required") }
        return NativeSignInRequest(
            clientId: clientId,
            email: email,
            givenName: Self.present(givenName),
            familyName: Self.present(familyName),
            hideEmail: hideEmail == "true",
            nonce: Self.present(nonce)
        )
    }

    /// `text` trimmed, or `nil` when that leaves nothing.
    static func present(_ text: String?) -> String? {
        guard let trimmed = text?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty else { return nil }
        return trimmed
    }
}

/// `POST /console/faults`: the pressed button's `mode` and an optional count (an empty field: every call).
struct ConsoleFaultForm: Decodable {
    var endpoint: String?
    var mode: String?
    var count: String?

    /// The control API's request for the same fault.
    /// - Throws: `AppleOAuthError` for an unknown endpoint or mode, or a count that is not a positive number.
    func request() throws(AppleOAuthError) -> FaultRequest {
        guard let endpoint, EmulatorFault.endpoints.contains(endpoint) else {
            throw .invalidRequest("endpoint must be keys, token or revoke")
        }
        guard let mode = mode.flatMap(EmulatorFault.Mode.init(rawValue:)),
            EmulatorFault.endpoints(for: mode).contains(endpoint)
        else {
            throw .invalidRequest("mode must be error, timeout, invalid_client or off (or ignore, for revoke)")
        }
        guard let text = ConsoleSignInForm.present(count) else {
            return FaultRequest(endpoint: endpoint, mode: mode, count: nil)
        }
        guard let count = Int(text), count > 0 else { throw .invalidRequest("count must be a positive number") }
        return FaultRequest(endpoint: endpoint, mode: mode, count: count)
    }
}

/// `POST /console/notifications/redeliver`: a kept notification's id.
struct ConsoleRedeliverForm: Decodable {
    var id: String?
}

/// `POST /console/delete-apple-id`.
struct ConsoleAppleIDForm: Decodable {
    var email: String?
}

/// The filters of the log page (`GET /emulator/log?endpoint=…&clientId=…`); empty means all.
struct LogFilter: Decodable {
    var endpoint: String?
    var clientId: String?

    func matches(_ entry: EmulatorLogEntry) -> Bool {
        if let endpoint = ConsoleSignInForm.present(endpoint), entry.endpoint != endpoint { return false }
        if let clientId = ConsoleSignInForm.present(clientId), entry.clientID != clientId { return false }
        return true
    }
}
