import AppleSignIn
import AuthServer
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `SIWA_LOG_FORMAT`: text for people, JSON lines for log collectors.
enum LogFormat: String, Sendable {
    case text
    case json
}

extension LogFormat {
    /// The format of the process's log handlers: text until a command has read its settings.
    private static let current = Atomic<Bool>(false)

    /// Installs the process's log handler, once, as the executable starts: each handler a library makes is text or
    /// JSON as ``use(_:)`` last said, so that no line of any library is written without its values escaped.
    static func bootstrap() {
        LoggingSystem.bootstrap { label -> any LogHandler in
            current.load(ordering: .relaxed) ? JSONLogHandler(label: label) : TextLogHandler(label: label)
        }
    }

    /// Makes the loggers created from now on write this format.
    func use() {
        Self.current.store(self == .json, ordering: .relaxed)
    }
}

extension Logger {
    /// The logger of a long-running command (serve, demo): the level and format of the settings, with the request id
    /// on every line a request causes (the store's too, which is given this logger). The format holds process-wide
    /// (``LogFormat/bootstrap()``), so that every library's logger made after this writes it too.
    static func siwa(level: Logger.Level, format: LogFormat) -> Logger {
        format.use()
        var logger = Logger(label: "siwa")
        logger.logLevel = level
        return logger.addingSiwaRequestID()
    }
}

/// One JSON object a line on standard error: `time` (ISO 8601, UTC, milliseconds), `level`, `label`, `message`,
/// `source` and the metadata as strings. A line is written with one `write(2)`, so lines of concurrent tasks never
/// interleave. Values are logged as siwa logs them: never tokens, codes or keys.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) {
        self.label = label
        self.metadataProvider = LoggingSystem.metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = Self.line(event, label: label, metadata: metadata, provider: metadataProvider, now: Self.now())
        line.withUnsafeBytes { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    /// The wall-clock time, as whole seconds since 1970 and milliseconds (0–999).
    static func now() -> (seconds: Int64, milliseconds: Int) {
        let time = Date().timeIntervalSince1970
        let seconds = time.rounded(.down)
        return (Int64(seconds), min(999, Int((time - seconds) * 1_000)))
    }

    /// The names the line's own fields take; metadata of these names is left out.
    private static let fieldNames: Set<String> = ["time", "level", "label", "message", "source"]

    /// One line: `{"time":…,"level":…,"label":…,"message":…,"source":…` and the metadata sorted by key (the
    /// handler's, then the provider's, then the event's, each overriding the one before), then `}` and a newline.
    static func line(
        _ event: LogEvent,
        label: String,
        metadata: Logger.Metadata,
        provider: Logger.MetadataProvider?,
        now: (seconds: Int64, milliseconds: Int)
    ) -> [UInt8] {
        var merged = metadata
        if let provided = provider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"time":""#.utf8)
        ISO8601Time.append(seconds: now.seconds, milliseconds: now.milliseconds, to: &out)
        out.append(contentsOf: #"","level":"#.utf8)
        JSONWriter.appendString(event.level.rawValue, to: &out)
        out.append(contentsOf: #","label":"#.utf8)
        JSONWriter.appendString(label, to: &out)
        out.append(contentsOf: #","message":"#.utf8)
        JSONWriter.appendString(event.message.description, to: &out)
        out.append(contentsOf: #","source":"#.utf8)
        JSONWriter.appendString(event.source, to: &out)
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) where !fieldNames.contains(key) {
            out.append(UInt8(ascii: ","))
            JSONWriter.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONWriter.appendString(value.description, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }
}
