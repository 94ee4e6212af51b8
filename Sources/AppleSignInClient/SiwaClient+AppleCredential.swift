public import Foundation

extension SiwaClient {
    /// Signs in with the fields of an `ASAuthorizationAppleIDCredential` as they are: the identity token and code as
    /// `Data?`. See `signIn(identityToken:authorizationCode:fullName:email:nonce:)` with text arguments.
    /// - Throws: `SiwaClientError` with code `.missingIdentityToken` when `identityToken` is nil or not UTF-8, and
    ///   the errors of the text variant.
    public func signIn(
        identityToken: Data?,
        authorizationCode: Data?,
        fullName: PersonNameComponents?,
        email: String?,
        nonce: String?
    ) async throws -> Session {
        guard let identityToken, let token = String(data: identityToken, encoding: .utf8) else {
            throw SiwaClientError(.missingIdentityToken, "the Apple credential has no identity token")
        }
        return try await signIn(
            identityToken: token,
            authorizationCode: authorizationCode.flatMap { String(data: $0, encoding: .utf8) },
            fullName: fullName,
            email: email,
            nonce: nonce
        )
    }
}
