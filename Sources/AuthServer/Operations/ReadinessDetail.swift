import AppleSignIn

/// The body of `GET /readyz` while the instance is ready: what an operator's probe may want to know beyond "ready",
/// today whether Apple accepts siwa's client secret (``AppleCredentialHealth``).
///
/// `{"status": "ready", "appleCredentials": {"state": "ok" | "failing" | "not_configured", "since"?, "call"?,
/// "clientIds"?}}`: while failing, when Apple first refused, the call it refused then and every client id refused now.
struct ReadinessDetail {
    let appleHealth: AppleCredentialHealth
    /// Whether siwa has Apple credentials at all (team, key id and key).
    let appleCredentialsConfigured: Bool

    var json: [UInt8] {
        var out = Array(#"{"status":"ready","appleCredentials":{"state":"#.utf8)
        let failing = appleHealth.failing
        guard let first = failing.first else {
            out += Array((appleCredentialsConfigured ? #""ok"}}"# : #""not_configured"}}"#).utf8)
            return out
        }
        out += Array(#""failing","since":"#.utf8)
        JSONWriter.appendString(UserResponse.iso8601(first.since), to: &out)
        out += Array(#","call":"#.utf8)
        JSONWriter.appendString(first.call.rawValue, to: &out)
        out += Array(#","clientIds":["#.utf8)
        for (index, refusal) in failing.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(refusal.clientID.rawValue, to: &out)
        }
        out += Array("]}}".utf8)
        return out
    }
}
