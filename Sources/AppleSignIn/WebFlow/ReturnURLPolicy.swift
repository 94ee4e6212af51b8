/// Where a browser (or an Android app's web view) may be sent after a web sign-in.
///
/// A requested return URL is one of:
/// - a relative path of this site (`/account?tab=1`): one leading `/`, never `//`, no backslash, printable ASCII only;
/// - an absolute `http`/`https` URL whose origin (scheme, host, port) is exactly one of ``allowedOrigins``;
/// - `android:<package>` for a package in ``allowedAndroidPackages``: the callback then redirects to the intent URL
///   the `sign_in_with_apple` Flutter package's Android activity expects (``androidIntentURL(package:parameters:)``).
///
/// Anything else is refused, so the sign-in cannot be turned into an open redirect.
/// - Warning: check the return URL both when the flow starts and again when it ends.
public struct ReturnURLPolicy: Sendable, Hashable {
    /// A return URL that passed the policy.
    public enum Destination: Sendable, Hashable {
        /// A path of this site, starting with a single `/`.
        case path(String)
        /// An absolute URL on an allowed origin (scheme and host lowercased).
        case origin(String)
        /// An Android app, by package name.
        case android(package: String)

        /// The text form: the path, the URL, or `android:<package>` (what the web flow stores).
        public var stringValue: String {
            switch self {
            case .path(let path): return path
            case .origin(let url): return url
            case .android(let package): return "android:\(package)"
            }
        }
    }

    /// Allowed origins, normalized: `https://app.example.com`, `http://127.0.0.1:8080`.
    public let allowedOrigins: [String]
    /// Allowed Android package names.
    public let allowedAndroidPackages: [String]

    /// Makes a policy, validating every entry.
    /// - Parameters:
    ///   - allowedOrigins: origins such as `https://app.example.com` or `http://localhost:3000` (no path, no user
    ///     info); the default port may be given or left out.
    ///   - allowedAndroidPackages: package names such as `com.example.app`.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming the entry that is wrong.
    public init(allowedOrigins: [String] = [], allowedAndroidPackages: [String] = []) throws(AppleSignInError) {
        var origins: [String] = []
        for (index, entry) in allowedOrigins.enumerated() {
            guard let parsed = Self.parseAbsolute(entry), parsed.rest.isEmpty || parsed.rest == "/" else {
                throw .invalidConfiguration(
                    "allowedReturnOrigins[\(index)]",
                    "use an origin such as https://app.example.com (scheme, host and optional port, no path)"
                )
            }
            origins.append(parsed.origin.serialized)
        }
        for (index, package) in allowedAndroidPackages.enumerated() where !Self.isValidPackageName(package) {
            throw .invalidConfiguration(
                "allowedAndroidPackages[\(index)]",
                "use an Android package name such as com.example.app"
            )
        }
        self.allowedOrigins = origins
        self.allowedAndroidPackages = allowedAndroidPackages
    }

    /// Checks a requested return URL.
    /// - Parameter requested: the `returnUrl` the client asked for.
    /// - Returns: where to go.
    /// - Throws: ``AppleSignInError/Code/malformed`` saying why the return URL is refused (without echoing it).
    public func resolve(_ requested: String) throws(AppleSignInError) -> Destination {
        guard !requested.isEmpty else { throw .malformed("returnUrl is empty") }
        guard requested.utf8.count <= 2048 else { throw .malformed("returnUrl is longer than 2048 bytes") }
        guard requested.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("returnUrl may contain only printable ASCII characters, without spaces")
        }
        guard !requested.contains("\\") else { throw .malformed("returnUrl must not contain a backslash") }
        if requested.hasPrefix("/") {
            guard !requested.hasPrefix("//") else {
                throw .malformed("returnUrl must be a path starting with a single '/', not '//'")
            }
            try Self.checkDecodedPath(requested)
            return .path(requested)
        }
        if requested.lowercased().hasPrefix("android:") {
            let package = String(requested.dropFirst("android:".count))
            guard Self.isValidPackageName(package) else {
                throw .malformed("returnUrl names an invalid Android package")
            }
            guard allowedAndroidPackages.contains(package) else {
                throw .malformed("returnUrl names an Android package that is not allowed")
            }
            return .android(package: package)
        }
        guard let parsed = Self.parseAbsolute(requested) else {
            throw .malformed("returnUrl must be a path such as /account or an http(s) URL on an allowed origin")
        }
        guard allowedOrigins.contains(parsed.origin.serialized) else {
            throw .malformed("returnUrl's origin is not on the allow-list")
        }
        if !parsed.rest.isEmpty { try Self.checkDecodedPath(parsed.rest) }
        return .origin(parsed.origin.serialized + parsed.rest)
    }

    /// Whether `origin` (an `Origin` header, or the origin of a `Referer`) is one of ``allowedOrigins``.
    /// - Parameter origin: an absolute http(s) URL or origin; a path after it is ignored.
    /// - Returns: `true` when its scheme, host and port are those of an allowed origin; `false` also for anything
    ///   that is not an absolute http(s) URL.
    public func allowsOrigin(_ origin: String) -> Bool {
        guard let parsed = Self.parseAbsolute(origin) else { return false }
        return allowedOrigins.contains(parsed.origin.serialized)
    }

    /// The serialized origin (`scheme://host[:port]`, default port left out) of an absolute http(s) URL, or `nil`.
    /// - Parameter url: the URL, such as a `Referer` header.
    /// - Returns: the origin, lowercased; `nil` for another scheme, user info, a bad host or port, a backslash, or
    ///   characters other than printable ASCII.
    public static func origin(of url: String) -> String? {
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), !url.contains("\\") else { return nil }
        return parseAbsolute(url)?.origin.serialized
    }

    /// The redirect that hands the callback to an Android app: `intent://callback?<parameters>#Intent;package=<package>;
    /// scheme=signinwithapple;end`, as the `sign_in_with_apple` Flutter package expects.
    /// - Parameters:
    ///   - package: an allowed package (see ``resolve(_:)``).
    ///   - parameters: the callback's form fields, in order; each name and value is percent-encoded.
    /// - Returns: the `intent://` URL to redirect the web view to.
    public static func androidIntentURL(package: String, parameters: [(String, String)]) -> String {
        "intent://callback?\(FormURLEncoding.encode(parameters))#Intent;package=\(package);scheme=signinwithapple;end"
    }

    // MARK: Parsing

    struct Origin: Hashable {
        var scheme: String
        var host: String
        var port: Int

        var serialized: String {
            let isDefault = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
            return isDefault ? "\(scheme)://\(host)" : "\(scheme)://\(host):\(port)"
        }
    }

    /// Splits `scheme://authority<rest>` for http and https; `nil` for anything else, user info, or a bad host.
    static func parseAbsolute(_ url: String) -> (origin: Origin, rest: String)? {
        let lowered = url.lowercased()
        let scheme: String
        if lowered.hasPrefix("https://") {
            scheme = "https"
        } else if lowered.hasPrefix("http://") {
            scheme = "http"
        } else {
            return nil
        }
        let afterScheme = url.dropFirst(scheme.count + 3)
        let authorityEnd =
            afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd].lowercased()
        let rest = String(afterScheme[authorityEnd...])
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("%"),
            !authority.contains("\\")
        else { return nil }
        var host = authority
        var port = scheme == "https" ? 443 : 80
        if authority.hasPrefix("[") {
            // An IPv6 literal: `[::1]` or `[::1]:8080`.
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[...close])
            let inside = authority[authority.index(after: authority.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let parsed = parsePort(after.dropFirst()) else { return nil }
                port = parsed
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                guard let parsed = parsePort(authority[authority.index(after: colon)...]) else { return nil }
                port = parsed
                host = String(authority[..<colon])
            }
            guard isValidHostName(host) else { return nil }
        }
        if !rest.isEmpty, rest.hasPrefix("//") { return nil }
        return (Origin(scheme: scheme, host: host, port: port), rest)
    }

    private static func parsePort(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(text), port > 0, port <= 65_535
        else { return nil }
        return port
    }

    /// A DNS name or dotted IPv4 address: letters, digits, `-` and `.`, labels of 1 to 63 characters.
    private static func isValidHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.utf8.allSatisfy { byte in
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                }
        }
    }

    /// Refuses paths that turn into another origin once a proxy or browser decodes them (`/%2F%2Fevil.example`,
    /// `/%5Cevil.example`) and encoded control characters.
    private static func checkDecodedPath(_ path: String) throws(AppleSignInError) {
        var decoded = path
        // Decode repeatedly: `%252F` is `%2F` after one pass and `/` after two.
        for _ in 0..<3 {
            guard decoded.contains("%") else { break }
            guard let once = percentDecodeLeniently(decoded) else {
                throw .malformed("returnUrl has an invalid percent-encoding")
            }
            decoded = once
        }
        let bytes = Array(decoded.utf8)
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw .malformed("returnUrl hides a control character in its encoding")
        }
        guard !decoded.contains("\\") else { throw .malformed("returnUrl hides a backslash in its encoding") }
        guard !decoded.hasPrefix("//") else { throw .malformed("returnUrl hides '//' in its encoding") }
    }

    private static func percentDecodeLeniently(_ text: String) -> String? {
        FormURLEncoding.percentDecode(text.utf8, plusIsSpace: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A Java package name: at least two dot-separated segments of letters, digits and `_`, each starting with a
    /// letter; at most 255 characters.
    static func isValidPackageName(_ package: String) -> Bool {
        guard package.utf8.count <= 255 else { return false }
        let segments = package.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first,
                (first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z"))
                    || (first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z"))
            else { return false }
            return segment.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
            }
        }
    }
}
