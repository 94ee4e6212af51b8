import ServiceLifecycle
import UnixSignals

/// Runs a reload on SIGHUP (forced) and every `interval` (not forced: the reload reads again only what changed), until
/// graceful shutdown: the service of what re-reads files (``ServerTLS/Reloader``, ``DataSealer/reloader(interval:logger:)``).
struct ReloadLoop: Service {
    let interval: Duration
    /// Called with whether to re-read whatever the files say, and why, for the log.
    let reload: @Sendable (_ force: Bool, _ why: String) -> Void

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sighup) { reload(true, "SIGHUP") }
            }
            group.addTask {
                while (try? await Task.sleep(for: interval)) != nil { reload(false, "files changed") }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }
}
