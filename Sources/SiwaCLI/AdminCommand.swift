import AccountStore
import ArgumentParser
import AuthServer
import Foundation

/// `siwa admin`: the admin API's own settings in the database; for now its service tokens.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Manage the admin API's service tokens.",
        discussion: """
            Example:
              siwa admin tokens create --name nightly-report --scope read
              siwa admin tokens list
              siwa admin tokens revoke nightly-report
            """,
        subcommands: [Tokens.self]
    )

    /// `siwa admin tokens`: credentials for scripts and other services on `/admin/api/`.
    struct Tokens: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokens",
            abstract: "Create, list and revoke service tokens for the admin API (/admin/api/).",
            discussion: """
                A service token is sent as 'Authorization: Bearer siwa_at_…' to /admin/api/ only: a read token may \
                call the GET routes, a write token every route. Each use that changes something is recorded in the \
                audit log under the token's name. The database keeps only a hash of the token: it is printed once, \
                when it is created.

                Example:
                  TOKEN=$(siwa admin tokens create --name nightly-report --scope read)
                  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/admin/api/stats
                """,
            subcommands: [Create.self, List.self, Revoke.self]
        )
    }
}

extension AdminCommand.Tokens {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a service token and print it once (only its hash is stored).",
            discussion: """
                The token is printed alone on standard output, for a script to capture; what it is goes to standard \
                error.

                Example:
                  siwa admin tokens create --name nightly-report --scope read --expires-in 30
                """
        )

        @Option(help: "Its name in the audit log: letters, digits, '.', '_' or '-', unique among tokens not revoked.")
        var name: String

        @Option(help: "read (the GET routes) or write (every admin API route).")
        var scope: String

        @Option(
            name: .customLong("expires-in"),
            help: "Days until it expires (1 to \(ServiceTokens.maximumLifetimeDays))."
        )
        var expiresIn = ServiceTokens.defaultLifetimeDays

        @OptionGroup var store: StoreOptions

        func validate() throws {
            guard AdminTokenScope(rawValue: scope) != nil else {
                throw ValidationError("--scope is read or write, not '\(scope)'")
            }
        }

        func run() async throws {
            let scope = AdminTokenScope(rawValue: self.scope) ?? .read
            try await withConfiguredStore(self.store) { _, store in
                do {
                    let (token, secret) = try await ServiceTokens.create(
                        name: name,
                        scope: scope,
                        lifetimeDays: expiresIn,
                        by: .operator,
                        in: store,
                        now: Date()
                    )
                    print(secret)
                    Terminal.error(
                        "created service token '\(token.name)' (scope \(token.scope.rawValue), expires "
                            + "\(token.expiresAt.formatted(.iso8601))): the line above is shown only now"
                    )
                } catch let error as StoreError where error.code == .duplicate {
                    Terminal.error(
                        "error: a service token named '\(name)' exists; revoke it first or pick another name"
                    )
                    throw ExitCode(1)
                } catch let error as StoreError where error.code == .invalidInput {
                    Terminal.error("error: \(error.reason)")
                    throw ExitCode(1)
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the service tokens, oldest first: name, scope, state, created, expires, last used.",
            discussion: "Never prints a token (siwa keeps only hashes).\n\nExample:\n  siwa admin tokens list --all"
        )

        @Flag(help: "Also list revoked and expired tokens.")
        var all = false

        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                let now = Date()
                let tokens = try await store.adminTokens().filter { all || $0.isActive(at: now) }
                if tokens.isEmpty { print(all ? "no service token" : "no active service token") }
                for token in tokens {
                    let state =
                        token.revokedAt != nil ? "revoked" : token.isActive(at: now) ? "active" : "expired"
                    let by =
                        token.createdBy.storedSubject.map { "\(token.createdBy.kind) \($0)" } ?? token.createdBy.kind
                    print(
                        "\(token.name)  \(token.scope.rawValue)  \(state)  created \(token.createdAt.formatted(.iso8601)) "
                            + "by \(by)  expires \(token.expiresAt.formatted(.iso8601))  last used "
                            + (token.lastUsedAt?.formatted(.iso8601) ?? "never")
                    )
                }
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a service token by name (recorded in the audit log); it is refused from then on.",
            discussion: "Example:\n  siwa admin tokens revoke nightly-report"
        )

        @Argument(help: "The token's name.")
        var name: String

        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                guard try await store.revokeAdminToken(named: name, by: .operator, now: Date()) != nil else {
                    Terminal.error("error: no service token named '\(name)' is unrevoked")
                    throw ExitCode(1)
                }
                print("revoked service token '\(name)'")
            }
        }
    }
}
