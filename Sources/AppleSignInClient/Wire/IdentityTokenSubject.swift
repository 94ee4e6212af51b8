import Foundation

/// Reads the `sub` claim (Apple's user id) of an identity token, without verifying it: the client only uses it to
/// tell whose first-time profile it holds. siwa verifies the token.
enum IdentityTokenSubject {
    private struct Claims: Decodable {
        var sub: String?
    }

    /// The `sub` claim, or nil when `token` is not a readable JWT.
    static func of(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let payload = Data(base64Encoded: base64) else { return nil }
        return (try? JSONDecoder().decode(Claims.self, from: payload))?.sub
    }
}
