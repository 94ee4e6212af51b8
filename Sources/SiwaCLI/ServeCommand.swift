import AccountStore
import AppleSignInAsyncHTTPClient
import ArgumentParser
import AuthServer
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Tracing
import UnixSignals

/// `siwa serve`: the server, configured from `SIWA_*` environment variables.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Sign in with Apple server.",
        discussion: """
            Settings come from SIWA_* environment variables, <VARIABLE>_FILE secret files, a .env file and \
            --config FILE, in that order of precedence; docs/configuration.md lists every one. Stores accounts in SQLite (SIWA_DATABASE_PATH, default \
            ./\(SettingsCatalog.declared.storage.databasePath.defaultText)) or PostgreSQL \
            (SIWA_DATABASE_URL=postgres://...). SIGTERM or Ctrl-C stops it gracefully.

            Example (against the local emulator):
              SIWA_APPLE_BASE_URL=http://127.0.0.1:9090 SIWA_TEAM_ID=DEMOTEAM01 SIWA_KEY_ID=DEMOKEY001 \\
              SIWA_PRIVATE_KEY_FILE=siwa-emulator/AuthKey_DEMOKEY001.p8 SIWA_BUNDLE_IDS=com.example.siwa.demo \\
              SIWA_SERVICES_ID=com.example.siwa.demo.web siwa serve
            """
    )

    @Option(
        help:
            "A configuration file (.json, .yaml, or KEY=value lines); SIWA_* variables override it. Default: SIWA_CONFIG."
    )
    var config: String?

    func run() async throws {
        let source: SettingsSource
        let preview: ServerSettings
        do {
            source = try await SettingsSource.load(configFile: config)
            // Read without creating the data key first: nothing is written before every check has passed.
            preview = try ServerSettings.load(from: source, createsDataKey: false)
        } catch let problem as ServerSettings.Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        }
        // What doctor calls a problem stops serve here; what it calls a warning is logged once, in its words.
        let findings = await DoctorCommand.review(source, for: .serve)
        let refusals = findings.filter { $0.refuses == true }
        guard refusals.isEmpty else {
            for refusal in refusals { Terminal.error("error: \(refusal.setting): \(refusal.message)") }
            Terminal.error("siwa serve did not start; siwa doctor lists every finding")
            throw ExitCode(2)
        }
        // Every listener's address, before any migration or key file: a port in use stops here, named.
        let unbound = await ListenerProbe.problems(ListenerProbe.listeners(of: preview))
        guard unbound.isEmpty else {
            for problem in unbound { Terminal.error("error: \(problem)") }
            Terminal.error("siwa serve did not start")
            throw ExitCode(2)
        }
        var settings: ServerSettings
        do {
            settings = try ServerSettings.load(from: source)
        } catch let problem as ServerSettings.Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        }
        let logger = Logger.siwa(level: settings.logLevel, format: settings.logFormat)
        for warning in findings where !warning.ok {
            logger.warning("\(warning.setting): \(warning.message)", metadata: ["found-by": "siwa doctor"])
        }
        DescriptorLimit.apply(to: &settings.server.connections, logger: logger)
        settings.server.webhooks.transport = HTTPWebhookTransport()
        // Once per process, and before the first call to Apple: the tracer is the process's `InstrumentationSystem`.
        let tracing: (any Service)?
        do {
            tracing = try settings.tracing.map { try $0.bootstrap(logger: logger) }
        } catch {
            Terminal.error("error: SIWA_TRACING_ENDPOINT: the exporter could not start: \(error)")
            throw ExitCode(2)
        }
        if let tracingSettings = settings.tracing {
            logger.info(
                "sending traces",
                metadata: ["endpoint": "\(tracingSettings.endpoint)", "sample_ratio": "\(tracingSettings.sampleRatio)"]
            )
        }
        // Held while serving: `siwa restore` refuses to replace the file under a running siwa, and a restore in
        // progress stops this start.
        var lock: DatabaseLock?
        if settings.databaseURL == nil {
            do {
                lock = try DatabaseLock(database: settings.databasePath, mode: .serving)
            } catch {
                Terminal.error("error: SIWA_DATABASE_PATH: \(error)")
                throw ExitCode(2)
            }
        }
        let store = try await StoreFactory.open(
            settings,
            logger: logger,
            checksDataKey: true,
            applicationName: "siwa serve"
        )
        // Serve refuses only data it needs at once (a signing key that does not open, above); an Apple refresh token
        // sealed under a key the ring lacks fails only when that account is revoked. Doctor's census names those, and
        // serve logs the same findings, counted while it already answers.
        let census = Task { [settings] in
            await Self.logSealedDataCensus(settings, store: store.store, logger: logger)
        }
        // The census reads the store: it ends before the store closes, whether the server stopped or failed.
        func stop() async {
            census.cancel()
            _ = await census.value
            await store.close()
            lock?.release()
        }
        do {
            let app = try await buildApplication(
                configuration: settings.server,
                apple: try settings.apple,
                store: store.store,
                transport: AsyncHTTPClientTransport(),
                sealer: settings.makeDataSealer(logger: logger),
                host: settings.host,
                port: settings.port,
                logger: logger,
                tls: settings.tls,
                tracer: tracing != nil ? InstrumentationSystem.tracer : nil
            )
            if let tracing {
                // A group stops its services in reverse order: the server first, then the exporter, which sends the
                // spans it still holds.
                try await ServiceGroup(
                    services: [tracing, app],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                ).run()
            } else {
                try await app.runService()
            }
        } catch let error as MetricsListenerError {
            // Taken between the probe and the server's own bind: named all the same.
            await stop()
            let listener = ListenerProbe.Listener.metrics(host: error.host, port: error.port)
            Terminal.error("error: \(listener.settings): \(ListenerProbe.describe(listener, error.underlying))")
            throw ExitCode(1)
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    /// Counts the sealed data by data key and logs doctor's findings: an error for each key the ring lacks and for
    /// data no key opens, one info line when every item opens.
    static func logSealedDataCensus(_ settings: ServerSettings, store: any AccountStore, logger: Logger) async {
        let census: DataResealer.Census
        do {
            census = try await DataResealer(store: store, sealer: settings.quietDataSealer).census(batchSize: 2_000)
        } catch {
            if !Task.isCancelled {
                logger.warning("the sealed data could not be counted", metadata: ["error": "\(error)"])
            }
            return
        }
        for finding in DoctorCommand.sealedDataFindings(census, settings) {
            if finding.ok {
                logger.info("\(finding.setting): \(finding.message)", metadata: ["found-by": "sealed-data census"])
            } else {
                logger.error("\(finding.setting): \(finding.message)", metadata: ["found-by": "sealed-data census"])
            }
        }
    }
}
