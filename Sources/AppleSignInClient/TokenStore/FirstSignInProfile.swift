/// The name and email that Apple gives an app only on the first authorization of an Apple ID.
///
/// Apple asks apps to keep them until their server has stored them: if that first request fails, Apple will not send
/// them again. The client keeps this profile in its token store and sends the name with every sign-in of the same
/// Apple ID (the identity token's `sub`) until the server answers with an account. The server reads the email from the identity token itself, so
/// the email is kept for the app's benefit but is not sent.
public struct FirstSignInProfile: Codable, Sendable, Equatable {
    /// Apple's user id (the identity token's `sub`) the profile belongs to; nil when it could not be read.
    public var appleUserID: String?
    /// Given name.
    public var givenName: String?
    /// Family name.
    public var familyName: String?
    /// Email, as `ASAuthorizationAppleIDCredential.email` gave it.
    public var email: String?

    /// Creates a profile.
    public init(appleUserID: String?, givenName: String?, familyName: String?, email: String?) {
        self.appleUserID = appleUserID
        self.givenName = givenName
        self.familyName = familyName
        self.email = email
    }

}
