/// `GET /`: what this server is and where its pages and machine-readable endpoints are, so that a newcomer who opens
/// the server's address in a browser finds the way to the sign-in page instead of an empty 404.
struct HomePage {
    /// Whether web sign-in is configured (a Services ID): the login page then has a working button.
    var webSignIn: Bool
    /// The tutorials' contracts that are on, by name.
    var contracts: [String]

    var page: HTMLPage {
        let links: [(href: String, label: String, note: String)] = [
            (
                "/login", "Sign-in page",
                webSignIn ? "Sign in with Apple in this browser." : "Web sign-in is not configured (no Services ID)."
            ),
            ("/.well-known/jwks.json", "JSON Web Key Set", "The public keys that verify this server's access tokens."),
            ("/healthz", "Liveness", "200 while the process runs."),
            ("/readyz", "Readiness", "200 while the database answers, 503 otherwise."),
            ("/admin", "Operator console", "For admins: accounts, sessions, the audit log and sign-in charts."),
        ]
        let items = links.map { link in
            #"<li><a href="\#(link.href)">\#(HTMLPage.escape(link.label))</a> "#
                + #"<span class="muted">\#(HTMLPage.escape(link.note))</span></li>"#
        }.joined(separator: "\n")
        let contractLine =
            contracts.isEmpty
            ? "" : "<p>Client contracts on: \(contracts.map(HTMLPage.escape).joined(separator: ", ")).</p>\n"
        return HTMLPage(
            title: "siwa",
            main: """
                <h1>siwa</h1>
                <p>A Sign in with Apple server: apps post Apple's identity token to <code>POST /auth/apple/native</code> \
                and get this server's own session; websites and Android apps use the web sign-in.</p>
                \(contractLine)<ul class="links">
                \(items)
                </ul>
                <p class="muted">The API, the settings and the deployment guide are in the README and the \
                <code>docs/</code> folder of siwa's repository.</p>
                """
        )
    }
}
