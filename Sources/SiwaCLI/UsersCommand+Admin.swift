import AccountStore
import AppleSignIn
import ArgumentParser
import Foundation

extension UsersCommand {
    /// Reads an admin subject: a siwa user id or an Apple `sub`, never an email (an address can change hands).
    static func adminSubject(_ text: String) throws -> AdminSubject {
        guard !text.contains("@") else {
            Terminal.error(
                "error: '\(text)' looks like an email: the admin role is granted to a siwa user id or an Apple sub "
                    + "(siwa users show \(text) prints both)"
            )
            throw ExitCode(1)
        }
        guard let subject = AdminSubject(text) else {
            Terminal.error("error: '\(text)' is not a siwa user id or an Apple sub")
            throw ExitCode(1)
        }
        return subject
    }

    /// `siwa users grant-admin`: the admin role, stored in the database and recorded in the audit log.
    struct GrantAdmin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant-admin",
            abstract: "Grant the admin role (the console at /admin and the admin API) to a siwa user id or Apple sub.",
            discussion: """
                The grant is stored in the database (every instance sees it at once) and recorded in the audit log \
                as done by an operator. Admins can also be listed in SIWA_ADMIN_USERS; those are not stored. An \
                email is refused: the role follows the account, and an email can change hands.

                Example:
                  siwa users grant-admin 6f1c2a8e-0b0e-4c57-9d2a-3c1f0e9b7a41
                """
        )

        @Argument(help: "A siwa user id or an Apple sub.")
        var id: String

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let subject = try UsersCommand.adminSubject(id)
            try await withConfiguredStore(self.store) { _, store in
                let known: Bool
                if let userID = subject.userID {
                    known = try await store.user(id: userID) != nil
                } else {
                    known = try await store.user(appleUserID: AppleUserID(subject.rawValue)) != nil
                }
                if try await store.grantAdmin(subject, by: .operator, now: Date()) {
                    print("granted the admin role to \(subject)")
                } else {
                    print("\(subject) holds the admin role already")
                }
                if !known {
                    Terminal.error("note: no account has \(subject) yet; the role applies once one signs in with it")
                }
            }
        }
    }

    /// `siwa users revoke-admin`: takes a stored admin role away.
    struct RevokeAdmin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-admin",
            abstract: "Revoke the admin role granted with siwa users grant-admin (recorded in the audit log).",
            discussion: """
                A subject listed in SIWA_ADMIN_USERS keeps the role until it is removed from there.

                Example:
                  siwa users revoke-admin 6f1c2a8e-0b0e-4c57-9d2a-3c1f0e9b7a41
                """
        )

        @Argument(help: "A siwa user id or an Apple sub.")
        var id: String

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let subject = try UsersCommand.adminSubject(id)
            try await withConfiguredStore(self.store) { _, store in
                if try await store.revokeAdmin(subject, by: .operator, now: Date()) {
                    print("revoked the admin role of \(subject)")
                } else {
                    Terminal.error("error: \(subject) holds no stored admin role")
                    throw ExitCode(1)
                }
            }
        }
    }

    /// `siwa users admins`: who holds the admin role in the database.
    struct Admins: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the admin roles granted in the database (SIWA_ADMIN_USERS lists the others).",
            discussion: "Example:\n  siwa users admins"
        )

        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await withConfiguredStore(self.store) { _, store in
                let grants = try await store.adminGrants()
                if grants.isEmpty { print("no admin role is granted in the database") }
                for grant in grants {
                    let by = grant.grantedBy.subject.map { "admin \($0)" } ?? grant.grantedBy.kind
                    print("\(grant.subject)  granted \(grant.grantedAt.formatted(.iso8601)) by \(by)")
                }
            }
        }
    }
}
