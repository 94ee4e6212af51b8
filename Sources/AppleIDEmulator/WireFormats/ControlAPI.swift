/// `POST /emulator/native-sign-in`: an app signs in on a device.
struct NativeSignInRequest: Decodable {
    var clientId: String
    /// Names the test Apple ID.
    var email: String
    var givenName: String?
    var familyName: String?
    var hideEmail: Bool?
    var nonce: String?
    /// Seconds the identity token lives; negative for an already expired token.
    var expiresIn: Int?
    /// The scopes the app requests (`name`, `email`); both when absent. The first authorization's decide what the
    /// team sees: without `email`, its tokens carry no email.
    var scopes: [String]?
}

/// What `ASAuthorizationAppleIDCredential` holds after a native sign-in.
struct NativeCredential: Encodable {
    struct FullName: Encodable {
        var givenName: String?
        var familyName: String?
    }
    var identityToken: String
    var authorizationCode: String
    /// The user's `sub`.
    var user: String
    /// Only on the first authorization of this Apple ID for the team, as on a device.
    var email: String?
    var fullName: FullName?
    var realUserStatus: Int

    enum CodingKeys: String, CodingKey {
        case identityToken, authorizationCode, user, email, fullName, realUserStatus
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identityToken, forKey: .identityToken)
        try container.encode(authorizationCode, forKey: .authorizationCode)
        try container.encode(user, forKey: .user)
        try container.encode(email, forKey: .email)  // null, not absent, after the first authorization
        try container.encode(fullName, forKey: .fullName)
        try container.encode(realUserStatus, forKey: .realUserStatus)
    }
}

/// `POST /emulator/notifications` and `POST /emulator/revoke-consent`.
struct NotificationRequest: Decodable {
    var clientId: String
    var email: String
    var type: String?
}

/// `POST /emulator/faults`.
struct FaultRequest: Decodable {
    var endpoint: String
    var mode: EmulatorFault.Mode
    var count: Int?
}
