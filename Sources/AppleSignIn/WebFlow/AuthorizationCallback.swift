/// Apple's `form_post` callback of the web flow, parsed.
public enum AuthorizationCallback: Sendable, Equatable {
    /// The user authorized: `code`, `id_token`, `state`, and `user` on the first authorization only.
    case authorized(code: String, idToken: String, state: String, user: AuthorizationUser?)
    /// The user pressed Cancel (`error=user_cancelled_authorize`).
    case cancelled(state: String?)
    /// Apple reported another `error`.
    case failed(error: String, state: String?)

    /// The `state` the callback carried.
    public var state: String? {
        switch self {
        case .authorized(_, _, let state, _): return state
        case .cancelled(let state), .failed(_, let state): return state
        }
    }

    /// The largest callback body accepted.
    public static let maximumBodySize = 32 * 1024

    /// Parses the form body Apple POSTs to the redirect URI.
    /// - Parameter formBody: the `application/x-www-form-urlencoded` body, at most ``maximumBodySize`` bytes.
    /// - Throws: ``AppleSignInError/Code/malformed`` naming the field that is missing or wrong.
    public init(formBody: some Collection<UInt8>) throws(AppleSignInError) {
        guard formBody.count <= Self.maximumBodySize else {
            throw .malformed("callback body is larger than \(Self.maximumBodySize) bytes")
        }
        guard let fields = FormURLEncoding.decode(formBody) else {
            throw .malformed("callback body is not a valid form (bad encoding or a repeated field)")
        }
        let state = fields["state"].flatMap { $0.isEmpty ? nil : $0 }
        if let error = fields["error"] {
            self = error == "user_cancelled_authorize" ? .cancelled(state: state) : .failed(error: error, state: state)
            return
        }
        guard let state else { throw .malformed("callback field 'state' is missing") }
        guard let code = fields["code"], !code.isEmpty else { throw .malformed("callback field 'code' is missing") }
        guard let idToken = fields["id_token"], !idToken.isEmpty else {
            throw .malformed("callback field 'id_token' is missing")
        }
        let user = try fields["user"].map { text throws(AppleSignInError) in try AuthorizationUser(json: text) }
        self = .authorized(code: code, idToken: idToken, state: state, user: user)
    }
}

/// The `user` field of the first web authorization: the name (which no token ever carries) and email.
public struct AuthorizationUser: Sendable, Hashable {
    public var firstName: String?
    public var middleName: String?
    public var lastName: String?
    public var email: String?

    /// Makes the user's details from their parts (tests, and callers that parse the field themselves).
    /// - Parameters:
    ///   - firstName: `name.firstName`.
    ///   - middleName: `name.middleName`.
    ///   - lastName: `name.lastName`.
    ///   - email: `email`.
    public init(firstName: String? = nil, middleName: String? = nil, lastName: String? = nil, email: String? = nil) {
        self.firstName = firstName
        self.middleName = middleName
        self.lastName = lastName
        self.email = email
    }

    /// Parses Apple's JSON string `{"name":{"firstName":…,"lastName":…},"email":…}`.
    /// - Parameter json: the `user` field of the callback; a missing or `null` name leaves the name parts `nil`.
    /// - Throws: ``AppleSignInError/Code/malformed``.
    public init(json: String) throws(AppleSignInError) {
        let document: JSONValue
        do {
            document = try JSONReader.parseObject(Array(json.utf8))
        } catch {
            throw .malformed("callback field 'user' is not a JSON object (\(error))")
        }
        let name = document["name"]
        if let name, name != .null {
            guard case .object = name else { throw .malformed("callback field 'user.name' is not an object") }
            self.firstName = try name.optionalString("firstName")
            self.middleName = try name.optionalString("middleName")
            self.lastName = try name.optionalString("lastName")
        }
        self.email = try document.optionalString("email")
    }
}
