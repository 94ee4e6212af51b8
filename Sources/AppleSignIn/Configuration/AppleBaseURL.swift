#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where Apple's Sign in with Apple endpoints live: `https://appleid.apple.com`, or the local emulator in development
/// and tests. The code has no test-only branches: only this value differs.
public struct AppleBaseURL: Hashable, Sendable, CustomStringConvertible {
    /// Apple's production service.
    public static let apple = try! AppleBaseURL("https://appleid.apple.com")

    /// `https` or `http`.
    public let scheme: String
    /// Host and optional port.
    public let authority: String
    /// A path prefix without a trailing slash (empty for Apple).
    public let pathPrefix: String

    /// Parses a base URL. Plain `http` is accepted only for loopback hosts (the emulator on this machine).
    /// - Parameters:
    ///   - string: an absolute URL without query, fragment or user info; a path becomes the prefix of every
    ///     endpoint's path, without its trailing slashes.
    ///   - setting: the name of the setting, used in the error reason.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming `setting`.
    public init(_ string: String, setting: String = "appleBaseURL") throws(AppleSignInError) {
        guard let url = URL(string: string), let scheme = url.scheme?.lowercased(), let host = url.host,
            !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
        else {
            throw .invalidConfiguration(setting, "expected an absolute URL such as https://appleid.apple.com")
        }
        // 127.0.0.0/8 only as an IPv4 literal: a name such as 127.example.com may resolve anywhere.
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        let loopback =
            host == "localhost" || host == "::1" || host == "[::1]"
            || (octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil })
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw .invalidConfiguration(setting, "use https (plain http is allowed only for a local emulator)")
        }
        self.scheme = scheme
        let bracketedHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        self.authority = url.port.map { "\(bracketedHost):\($0)" } ?? bracketedHost
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        self.pathPrefix = path
    }

    /// The absolute URL of `path` (which starts with `/`).
    /// - Parameter path: an endpoint's path, such as `/auth/authorize`.
    /// - Returns: scheme, authority, path prefix and `path`, as one string.
    public func url(_ path: String) -> String {
        "\(scheme)://\(authority)\(pathPrefix)\(path)"
    }

    public var description: String { url("") }
}
