/// A configuration the emulator cannot run with, or one Apple would refuse to register: which field, what is wrong
/// with it, and what to write there instead. It never repeats a key.
public struct EmulatorConfigurationError: Error, CustomStringConvertible, Sendable {
    /// The field's path in the configuration's JSON, such as `teams[0].clients[1].redirectURIs[0]`.
    public let field: String
    /// What is wrong with the field: "is missing", "is not a string", ….
    public let problem: String
    /// What to write in the field instead.
    public let remedy: String

    /// - Parameters:
    ///   - field: the field's path in the configuration's JSON.
    ///   - problem: what is wrong with it.
    ///   - remedy: what to write there instead.
    public init(field: String, problem: String, remedy: String) {
        self.field = field
        self.problem = problem
        self.remedy = remedy
    }

    /// `teams[0].keyID is missing: write …`.
    public var description: String { "\(field) \(problem): write \(remedy)" }

    /// The field and what to write there for an error of `JSONDecoder`, whose own description names Swift's types.
    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(path: context.codingPath + [key], problem: "is missing")
        case .typeMismatch(let type, let context):
            self.init(path: context.codingPath, problem: "is not \(Self.kind(type))")
        case .valueNotFound(let type, let context):
            self.init(path: context.codingPath, problem: "is null, not \(Self.kind(type))")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            self.init(field: "the file", problem: "is not JSON", remedy: EmulatorConfiguration.example)
        case .dataCorrupted(let context):
            self.init(path: context.codingPath, problem: "is not valid")
        @unknown default:
            self.init(field: "the file", problem: "cannot be read", remedy: EmulatorConfiguration.example)
        }
    }

    private init(path: [any CodingKey], problem: String) {
        self.init(field: Self.field(path), problem: problem, remedy: Self.remedy(path))
    }

    /// `teams[0].clients[1].clientID` for a coding path.
    static func field(_ path: [any CodingKey]) -> String {
        var field = ""
        for key in path {
            if let index = key.intValue {
                field += "[\(index)]"
            } else {
                field += (field.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return field.isEmpty ? "the file" : field
    }

    /// What to write in the field a coding path ends in (an element of a list: what the list holds).
    private static func remedy(_ path: [any CodingKey]) -> String {
        remedy(forKey: path.last { $0.intValue == nil }?.stringValue ?? "")
    }

    /// What to write in a field named `key` (`teamID`, `redirectURIs`, …).
    static func remedy(forKey key: String) -> String {
        remedies[key] ?? EmulatorConfiguration.example
    }

    private static let remedies: [String: String] = [
        "teams": #"a list of teams: [{"teamID", "keyID", "publicKeyPEM", "clients"}]"#,
        "teamID": #"the team's 10-character Team ID, such as "ABCDE12345""#,
        "keyID": #"the 10-character Key ID of the team's Sign in with Apple key, as in AuthKey_<Key ID>.p8"#,
        "publicKeyPEM": publicKeyRemedy,
        "clients": #"a list of the team's bundle ids and Services IDs: [{"clientID": "com.example.app"}]"#,
        "clientID": #"a bundle id or Services ID, such as "com.example.app""#,
        "redirectURIs": #"a list of https URLs, such as ["https://example.com/auth/apple/callback"], or nothing"#
            + " for a bundle id that signs in natively only",
        "notificationURL": #"the URL of the server's notification endpoint, such as "#
            + #""https://example.com/auth/apple/notifications""#,
        "issuer": #"the iss of tokens, such as "https://appleid.apple.com""#,
        "keyGracePeriod": "a number of seconds, such as 3600",
        "faultHangDuration": "a number of seconds, such as 30",
        "hostNames": #"a list of host names, such as ["emulator"]"#,
        "allowLocalRedirectURIs": "true or false",
    ]

    /// How to get a team's `publicKeyPEM` from its `.p8`.
    static let publicKeyRemedy =
        #"the public half of the team's .p8 key in PEM, with its line breaks as \n: "#
        + "openssl ec -in AuthKey_<Key ID>.p8 -pubout (docs/emulator.md)"

    /// How JSON calls a Swift type.
    private static func kind(_ type: Any.Type) -> String {
        let name = "\(type)"
        if name.hasPrefix("Array") { return "a list" }
        if name.hasPrefix("Dictionary") { return "an object" }
        if name == "Bool" { return "true or false" }
        if name == "String" { return "a string" }
        if ["Double", "Float", "Int", "TimeInterval"].contains(name) { return "a number" }
        return "of the right type"
    }
}
