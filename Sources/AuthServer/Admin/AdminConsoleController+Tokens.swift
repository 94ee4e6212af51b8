import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird

/// The console's page of the admin API's service tokens: every token (never its secret, which siwa does not keep)
/// and a form to revoke each one not revoked yet. Tokens are created at the command line (`siwa admin tokens
/// create`), where the secret can be printed once to the operator who asked for it.
extension AdminConsoleController {
    @Sendable func tokens(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        let now = clock.now
        let formToken = formTokens.token(for: admin.sessionID)
        let rows = try await store.adminTokens().reversed().map { token in
            let state =
                token.revokedAt.map { "revoked \(Self.time($0))" } ?? (token.isActive(at: now) ? "active" : "expired")
            let by =
                switch token.createdBy {
                case .admin(let subject): "admin <code>\(HTMLPage.escape(subject.rawValue))</code>"
                case .operator: "an operator"
                default: HTMLPage.escape(token.createdBy.kind)
                }
            let revoke =
                token.revokedAt != nil
                ? ""
                : """
                <form class="inline" method="post" action="/admin/tokens/revoke">\
                <input type="hidden" name="token" value="\(HTMLPage.escape(formToken))">\
                <input type="hidden" name="name" value="\(HTMLPage.escape(token.name))">\
                <label><input type="checkbox" name="confirm" value="yes" required> sure</label> \
                <button type="submit" class="secondary">Revoke</button></form>
                """
            return """
                <tr><td><code>\(HTMLPage.escape(token.name))</code></td><td>\(token.scope.rawValue)</td>\
                <td>\(state)</td><td>\(Self.time(token.createdAt)) by \(by)</td><td>\(Self.time(token.expiresAt))</td>\
                <td>\(token.lastUsedAt.map(Self.time) ?? "never")</td><td>\(revoke)</td></tr>
                """
        }.joined()
        let notice =
            request.uri.queryParameters["done"].map {
                "<p class=\"notice\">Done: \(HTMLPage.escape(String($0))).</p>"
            } ?? ""
        let main = """
            \(notice)<section class="panel"><p>Scripts and other services call the admin API (<code>/admin/api/</code>) \
            with these tokens: scope read for its GET routes, write for all of them. Create one with \
            <code>siwa admin tokens create --name NAME --scope read</code>; siwa keeps only its hash.</p>\
            <div class="scroll"><table><thead><tr><th>Name</th><th>Scope</th><th>State</th><th>Created</th>\
            <th>Expires</th><th>Last used</th><th></th></tr></thead><tbody>\
            \(rows.isEmpty ? "<tr><td colspan=\"7\">No service token.</td></tr>" : rows)</tbody></table></div></section>
            """
        return page("Service tokens", .tokens, admin, main)
    }

    @Sendable func revokeToken(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        do {
            let fields = try await checkedForm(request, admin)
            guard let name = fields["name"], AdminToken.isValidName(name) else {
                throw RequestFields.invalid("name", "is not a service token's name")
            }
            guard try await store.revokeAdminToken(named: name, by: .admin(admin.subject), now: clock.now) != nil else {
                throw AuthServerError(
                    .notFound,
                    AuthServerError.Code.notFound,
                    "no service token of that name is active"
                )
            }
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/admin/tokens?done=\(Self.queryValue("token \(name) revoked"))",
                    .cacheControl: "no-store",
                ]
            )
        } catch let error as AuthServerError {
            return Self.refusal(error, admin: admin)
        }
    }
}
