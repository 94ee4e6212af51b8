import AppleSignIn
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The text log (`SIWA_LOG_FORMAT=text`, the default): swift-log's `StreamLogHandler` line, `time level label: key=value
/// … [source] message`, on standard error, with every value escaped (``LoggedText/escaped(_:)``). A value a client
/// chose (a token header's `kid`, a user agent, a query) can hold a newline or a terminal's escape sequence, and the
/// stream handler writes it as it is: a forged line of the client's in the operator's log. A line is written with one
/// `write(2)`, so lines of concurrent tasks never interleave.
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = Self.line(event, label: label, metadata: metadata, provider: metadataProvider, time: Self.now())
        line.utf8CString.withUnsafeBytes { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count - 1) }
    }

    /// The local time as `StreamLogHandler` writes it (`2026-12-01T22:41:36+0000`).
    static func now() -> String {
        var timestamp = time(nil)
        var local = tm()
        guard localtime_r(&timestamp, &local) != nil else { return "<unknown>" }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 32) { buffer in
            let count = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: count), as: UTF8.self)
        }
    }

    /// One line, ending in a newline: the metadata of the handler, then the provider's, then the event's (each
    /// overriding the one before) and the event's error, sorted by key, every key and value escaped, and the message
    /// escaped.
    static func line(
        _ event: LogEvent,
        label: String,
        metadata: Logger.Metadata,
        provider: Logger.MetadataProvider?,
        time: String
    ) -> String {
        var merged = metadata
        if let provided = provider?.get(), !provided.isEmpty { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata, !extra.isEmpty { merged.merge(extra) { _, new in new } }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = time
        line += " "
        line += event.level.rawValue
        line += " "
        line += LoggedText.escaped(label)
        line += ":"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " "
            line += LoggedText.escaped(key)
            line += "="
            line += LoggedText.escaped(value.description)
        }
        line += " ["
        line += LoggedText.escaped(event.source)
        line += "] "
        line += LoggedText.escaped(event.message.description)
        line += "\n"
        return line
    }
}
