import AccountStore
import AppleSignIn
import ArgumentParser
import AuthServer
import Foundation
import Logging

extension UsersCommand {
    /// The `--json` answer of `siwa users disable` and `siwa users enable`.
    struct StatusOutput: Encodable {
        var id: String
        /// `active` or `disabled`.
        var status: String
        var disabledAt: Date?
        /// Sessions the disabling ended (absent for enable).
        var sessionsEnded: Int?
    }

    /// `siwa users disable`: the account can no longer sign in or refresh, and its sessions end.
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an account: its sessions end and it cannot sign in or refresh until enabled.",
            discussion: """
                Sign-ins and refreshes of a disabled account answer 403 account_disabled (an error page on the web \
                routes). Running `siwa serve` instances refuse its access tokens within seconds (their store \
                refresh). Nothing is deleted; `siwa users enable` lets it sign in again.

                Example:
                  siwa users disable ann@example.com
                """
        )

        @Argument(help: "A siwa user id, an Apple sub or an email (of one account).")
        var id: String

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await UsersCommand.withAccount(named: id, self.store) { _, store, user in
                guard let disabled = try await UsersCommand.statusService(store).disable(user.id) else {
                    throw UsersCommand.noAccount(id)
                }
                if json {
                    print(
                        try UsersCommand.json(
                            StatusOutput(
                                id: user.id.description,
                                status: "disabled",
                                disabledAt: disabled.user.disabledAt,
                                sessionsEnded: disabled.endedSessions.count
                            )
                        )
                    )
                } else {
                    print("account \(user.id) disabled, \(disabled.endedSessions.count) session(s) ended")
                }
            }
        }
    }

    /// `siwa users enable`: a disabled account can sign in again.
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable a disabled account: it can sign in again (its ended sessions stay ended).",
            discussion: "Example:\n  siwa users enable ann@example.com"
        )

        @Argument(help: "A siwa user id, an Apple sub or an email (of one account).")
        var id: String

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await UsersCommand.withAccount(named: id, self.store) { _, store, user in
                guard try await UsersCommand.statusService(store).enable(user.id) != nil else {
                    throw UsersCommand.noAccount(id)
                }
                if json {
                    print(try UsersCommand.json(StatusOutput(id: user.id.description, status: "active")))
                } else {
                    print("account \(user.id) enabled\(user.isDisabled ? "" : " (it was not disabled)")")
                }
            }
        }
    }

    /// Disables and enables, logging only errors (the command prints its own answer).
    static func statusService(_ store: any AccountStore) -> AccountStatusService {
        var logger = Logger(label: "siwa")
        logger.logLevel = .error
        return AccountStatusService(store: store, clock: SystemWallClock(), logger: logger)
    }
}
