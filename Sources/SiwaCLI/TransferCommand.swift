import AccountStore
import AppleSignIn
import AppleSignInAsyncHTTPClient
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `siwa transfer export|import`: moves accounts to another developer team (Apple's TN3159 app transfer).
struct TransferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer",
        abstract: "Move accounts to another developer team when the app is transferred (Apple's TN3159).",
        discussion: """
            Before the transfer, the sending team runs `siwa transfer export --target TEAMID`: it asks Apple for each \
            user's transfer_sub and keeps it. After the transfer, the receiving team runs `siwa transfer import` on \
            the same user table (the same database, or a dump restored into its own): it exchanges each \
            transfer_sub for the user's new sub and email and moves the account to it. Users who sign in before \
            the import are moved by the transfer_sub in their identity token (Apple sends it for 60 days).

            Example:
              siwa transfer export --target NEWTEAM123     # the sending team, before the transfer
              siwa transfer import                         # the receiving team, after it
            """,
        subcommands: [Export.self, Import.self]
    )

    /// `--batch` and `--json`, shared by both directions.
    struct Options: ParsableArguments {
        @Option(help: "Accounts per batch (1 to 10000).")
        var batch = 100

        @Option(help: "The client id to use with Apple (default: the first of SIWA_BUNDLE_IDS, else SIWA_SERVICES_ID).")
        var clientID: String?

        @Flag(help: "Print the summary as JSON.")
        var json = false

        @OptionGroup var store: StoreOptions

        func validate() throws {
            guard (1...10_000).contains(batch) else { throw ValidationError("--batch must be from 1 to 10000") }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sending team: get and keep each user's transfer_sub toward the receiving team.",
            discussion: """
                Runs with the sending team's settings, as `siwa serve` does: SIWA_TEAM_ID, SIWA_KEY_ID, \
                SIWA_PRIVATE_KEY_FILE, SIWA_BUNDLE_IDS and the database. Accounts are walked in batches and each \
                transfer_sub is kept as soon as Apple gives it, so an interrupted export is resumed by running it \
                again: accounts already exported are skipped. Exits 1 when an account failed (run it again to retry \
                them) or Apple refused the team's credentials.

                Example:
                  SIWA_TEAM_ID=OLDTEAM123 SIWA_KEY_ID=ABC123DEFG SIWA_PRIVATE_KEY_FILE=AuthKey_ABC123DEFG.p8 \\
                  SIWA_BUNDLE_IDS=com.example.app siwa transfer export --target NEWTEAM456 --batch 500
                """
        )

        @Option(help: "The receiving team's id (10 characters).")
        var target: String

        @OptionGroup var options: Options

        func validate() throws {
            do {
                _ = try TeamID(target, setting: "--target")
            } catch {
                throw ValidationError(error.reason)
            }
        }

        func run() async throws {
            let target = try TeamID(target, setting: "--target")
            try await TransferCommand.run(options, verb: "exported") { service, _, progress in
                try await service.export(targetTeam: target, batchSize: options.batch, progress: progress)
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Receiving team: move each exported account to the user's sub at this team.",
            discussion: """
                Runs with the receiving team's settings (SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_PRIVATE_KEY_FILE, \
                SIWA_BUNDLE_IDS) on the user table the sending team exported. Each pending transfer_sub is \
                exchanged at Apple for the new sub and email and the account moves to it (its sessions stay; its \
                Apple refresh token, issued to the sending team, is dropped). Transfers to other teams are skipped. \
                Resumable: a re-run only handles transfers not yet done. Exits 1 when an account failed.

                Example:
                  SIWA_TEAM_ID=NEWTEAM456 SIWA_KEY_ID=XYZ987WVUT SIWA_PRIVATE_KEY_FILE=AuthKey_XYZ987WVUT.p8 \\
                  SIWA_BUNDLE_IDS=com.example.app siwa transfer import --json
                """
        )

        @OptionGroup var options: Options

        func run() async throws {
            try await TransferCommand.run(options, verb: "imported") { service, team, progress in
                try await service.importPending(team: team, batchSize: options.batch, progress: progress)
            }
        }
    }

    /// The `--json` answer.
    struct Output: Encodable {
        var done: Int
        var skipped: Int
        var failed: Int
        var batches: Int
        var failures: [AccountTransferService.Failure]
    }

    /// Opens the store, builds the service from the settings, runs `body`, prints progress and the summary.
    private static func run(
        _ options: Options,
        verb: String,
        _ body: (
            AccountTransferService, TeamID, (AccountTransferService.Summary) -> Void
        ) async throws -> AccountTransferService.Summary
    ) async throws {
        try await withConfiguredStore(options.store, needsDataKey: true) { settings, store in
            var logger = Logger(label: "siwa")
            logger.logLevel = .error
            let transport = AsyncHTTPClientTransport()
            guard let credentials = settings.appleIfConfigured?.credentials,
                let apple = settings.makeAppleClient(transport: transport, logger: logger)
            else {
                Terminal.error(
                    "error: SIWA_TEAM_ID, SIWA_KEY_ID and SIWA_PRIVATE_KEY_FILE are needed: Apple's migration endpoint "
                        + "takes the team's client secret"
                )
                throw ExitCode(2)
            }
            guard
                let clientID = options.clientID.map({ ClientID($0) }) ?? settings.appleIfConfigured?.bundleIDs.first
                    ?? settings.appleIfConfigured?.servicesID
            else {
                Terminal.error("error: SIWA_BUNDLE_IDS: set the app's bundle id (or pass --client-id)")
                throw ExitCode(2)
            }
            let service = AccountTransferService(
                store: store,
                apple: apple,
                clientID: clientID,
                clock: SystemWallClock(),
                logger: logger
            )
            let summary: AccountTransferService.Summary
            do {
                summary = try await body(service, credentials.teamID) { progress in
                    let line = "batch \(progress.batches): \(progress.done) \(verb), \(progress.failed) failed"
                    if options.json { Terminal.error(line) } else { print(line) }
                }
            } catch let error as AppleSignInError {
                Terminal.report(error, json: options.json)
                throw ExitCode(1)
            }
            if options.json {
                print(
                    try UsersCommand.json(
                        Output(
                            done: summary.done,
                            skipped: summary.skipped,
                            failed: summary.failed,
                            batches: summary.batches,
                            failures: summary.failures
                        )
                    )
                )
            } else {
                for failure in summary.failures {
                    Terminal.error("failed: account \(failure.userID): \(failure.code): \(failure.reason)")
                }
                var line = "\(summary.done) account(s) \(verb), \(summary.failed) failed"
                if summary.skipped > 0 { line += ", \(summary.skipped) skipped (transfers to another team)" }
                if summary.failed > 0 { line += "; run the command again to retry the failed accounts" }
                print(line)
            }
            if summary.failed > 0 { throw ExitCode(1) }
        }
    }

}
