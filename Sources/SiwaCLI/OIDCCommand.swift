import AppleSignIn
import ArgumentParser
import AuthServer
import Foundation

/// `siwa oidc`: the OpenID provider's relying parties.
struct OIDCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oidc",
        abstract: "Register relying parties of siwa's OpenID provider (docs/oidc.md).",
        discussion: """
            Relying parties are listed in SIWA_OIDC_CLIENTS (a JSON array); new-client makes an entry and its secret.

            Example:
              siwa oidc new-client --id grafana --redirect-uri https://grafana.example.com/login/generic_oauth
            """,
        subcommands: [NewClient.self]
    )

    /// `siwa oidc new-client`: a fresh client secret and the client's entry for `SIWA_OIDC_CLIENTS`.
    struct NewClient: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-client",
            abstract: "Make a client secret and print the client's entry for SIWA_OIDC_CLIENTS.",
            discussion: """
                Prints the secret (256 random bits, base64url) once, for the relying party's configuration, and the \
                JSON object to add to the SIWA_OIDC_CLIENTS array, which holds only the secret's SHA-256. siwa \
                never stores or logs the secret itself: lose it and make a new one. With --public there is no \
                secret: the client must use PKCE (a native app or a single-page app).

                Example:
                  siwa oidc new-client --id grafana \\
                    --redirect-uri https://grafana.example.com/login/generic_oauth \\
                    --post-logout-redirect-uri https://grafana.example.com/login
                """
        )

        @Option(help: "The client_id: 1 to 128 characters of A-Z a-z 0-9 . _ ~ -")
        var id: String

        @Option(name: .customLong("redirect-uri"), help: "An exact redirect URI (repeat for more).")
        var redirectURIs: [String]

        @Option(
            name: .customLong("post-logout-redirect-uri"),
            help: "Where logout may return to (repeat for more)."
        )
        var postLogoutRedirectURIs: [String] = []

        @Option(name: .customLong("scope"), help: "A scope it may be granted: openid, email, profile (default all).")
        var scopes: [String] = []

        @Flag(
            name: .customLong("public"),
            help: "A public client: no secret, PKCE required; users allow it once on a consent page."
        )
        var isPublic = false

        @Option(help: "The app's name as users know it, shown on the consent page (1 to 64 characters).")
        var name: String?

        func run() async throws {
            var entry: [String: Any] = [
                "id": id,
                "redirectURIs": redirectURIs,
                "scopes": scopes.isEmpty ? OpenIDConfiguration.supportedScopes : scopes,
            ]
            if !postLogoutRedirectURIs.isEmpty { entry["postLogoutRedirectURIs"] = postLogoutRedirectURIs }
            if let name { entry["name"] = name }
            var secret: String?
            if isPublic {
                entry["public"] = true
            } else {
                let fresh = WebAuthorization.randomToken(byteCount: 32)
                entry["secretSHA256"] = OpenIDClient.hashSecret(fresh).map { String(format: "%02x", $0) }.joined()
                secret = fresh
            }
            let json = String(
                decoding: try JSONSerialization.data(
                    withJSONObject: entry,
                    options: [.sortedKeys, .withoutEscapingSlashes]
                ),
                as: UTF8.self
            )
            do {
                // The same checks as siwa serve's, so that a bad id or URI fails here and not at start-up.
                _ = try ServerSettings.openIDClients("[\(json)]")
            } catch let problem as ServerSettings.Problem {
                throw ValidationError(problem.fix)
            }
            if let secret {
                print("client_id:     \(id)")
                print("client_secret: \(secret)")
                print("")
                print("Give the secret to the relying party; siwa keeps only its hash. Add to SIWA_OIDC_CLIENTS:")
            } else {
                print(
                    "client_id: \(id) (public: no secret, PKCE required; each user allows it once on siwa's consent "
                        + "page). Add to SIWA_OIDC_CLIENTS:"
                )
            }
            print(json)
        }
    }
}
