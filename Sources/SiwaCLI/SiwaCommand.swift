public import ArgumentParser
import AuthServer

/// The `siwa` command: the composition root of siwa's parts and the tools around them.
public struct SiwaCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "siwa",
        abstract: "Sign in with Apple, done right: a server, an Apple ID emulator and the tools around them.",
        discussion: """
            Start with `siwa demo`: the emulator and the server together, no Apple account needed.

            Example:
              siwa demo
              siwa users list        # in the same folder, while or after the demo runs
            """,
        version: SiwaVersion.current,
        subcommands: [
            DemoCommand.self, ServeCommand.self, EmulatorCommand.self, ClientSecretCommand.self, VerifyCommand.self,
            DoctorCommand.self, MigrateCommand.self, KeysCommand.self, UsersCommand.self, TransferCommand.self,
            OIDCCommand.self, AdminCommand.self, BackupCommand.self, RestoreCommand.self, WebhooksCommand.self,
        ]
    )

    public init() {}
}

extension SiwaCommand {
    /// Parses the process's arguments, runs the command and exits with its status (the `siwa` executable's entry).
    public static func start() async {
        LogFormat.bootstrap()
        await main()
    }
}
