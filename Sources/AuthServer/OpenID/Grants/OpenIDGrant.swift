import Hummingbird

/// One grant type of the token endpoint (RFC 6749 §4), as dex's `server/grants/` has them: its `grant_type`, and how
/// it answers a request of an authenticated client. ``OpenIDController/grants`` lists those siwa offers; the
/// discovery document's `grant_types_supported` and the `unsupported_grant_type` text are read from that list.
protocol OpenIDGrant: Sendable {
    /// The `grant_type` value it answers.
    var type: String { get }

    /// Answers one token request of this grant.
    /// - Parameters:
    ///   - form: the request's form fields.
    ///   - client: the client, authenticated by the token endpoint already (RFC 6749 §3.2.1).
    ///   - request: the request, for what the grant reads of it besides the form.
    ///   - context: the request's context (its logger).
    ///   - controller: the provider, whose store, sessions and keys the grant uses.
    /// - Throws: ``OAuthError`` in RFC 6749 §5.2's shape.
    func answer(
        _ form: [String: String],
        client: OpenIDClient,
        request: Request,
        context: SiwaRequestContext,
        by controller: OpenIDController
    ) async throws -> Response
}

extension OpenIDController {
    /// The grants of the token endpoint, in the order the discovery document lists them.
    static let grants: [any OpenIDGrant] = [AuthorizationCodeGrant(), RefreshTokenGrant()]

    /// `authorization_code or refresh_token`: the grant types, for the `unsupported_grant_type` text.
    static var grantTypesInWords: String {
        let types = grants.map(\.type)
        guard types.count > 1 else { return types.first ?? "" }
        return types.dropLast().joined(separator: ", ") + " or " + types[types.count - 1]
    }
}
