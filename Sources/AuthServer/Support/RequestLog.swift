import AccountStore
public import Logging
import Synchronization

/// What the access log says of one request, filled in as the request goes: its id, the client's address, and who the
/// caller turned out to be. ``AccessLogMiddleware`` makes one per request and binds it to the request's task
/// (``current``), so that code which never sees the request context (the services, the store) can name the caller, and
/// every line logged while the request runs carries its id (``Logging/Logger/MetadataProvider/siwaRequestID``).
final class RequestLog: Sendable {
    /// The request's id: a trusted proxy's `X-Request-Id`, or a new one (``newID()``).
    let id: String
    /// The client's address as the rate limits see it: the peer, or the client a trusted proxy names.
    let client: String?
    private let caller = Mutex<Caller?>(nil)
    private let serviceToken = Mutex<String?>(nil)

    /// The account and session a request acted for.
    struct Caller: Sendable, Equatable {
        var user: UserID
        var session: SessionID?
    }

    /// The request log of the request the current task is answering; `nil` outside a request.
    @TaskLocal static var current: RequestLog?

    init(id: String, client: String?) {
        self.id = id
        self.client = client
    }

    /// Records the account (and session) the request acts for: the session it presented, or the one it started or
    /// refreshed. A later call replaces an earlier one (a refresh names the session it rotated).
    func identify(user: UserID, session: SessionID?) {
        caller.withLock { $0 = Caller(user: user, session: session) }
    }

    /// The account and session the request acted for, when known.
    var identified: Caller? { caller.withLock { $0 } }

    /// Records the admin API service token the request acted with, by its name (never its secret).
    func identify(serviceToken name: String) {
        serviceToken.withLock { $0 = name }
    }

    /// The name of the service token the request acted with, when it was one.
    var serviceTokenName: String? { serviceToken.withLock { $0 } }

    /// The metadata key of the request id on every log line.
    static let idKey = "request_id"

    /// The most characters of an id taken from a trusted proxy.
    static let maximumIDLength = 64

    /// A new request id: 11 characters of the base64url alphabet, 64 bits from the system's random generator (one
    /// `getrandom` call; two requests of a billion share an id with a chance of about 3%, and they differ in time
    /// anyway). At most 15 UTF-8 bytes, a Swift string keeps it inline: making one allocates nothing.
    static func newID() -> String {
        var random = SystemRandomNumberGenerator()
        let bits = random.next()
        return String(unsafeUninitializedCapacity: 11) { buffer in
            for index in 0..<11 {
                buffer[index] = alphabet[Int((bits >> (UInt64(index) * 6)) & 0x3F)]
            }
            return 11
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Whether `value` may be taken as a request id: 1 to ``maximumIDLength`` letters, digits and `-_.:+/=` (what
    /// nginx's `$request_id`, UUIDs and base64 ids are made of), so that no id can break a log line or a header.
    static func isAcceptable(_ value: Substring) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= maximumIDLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"),
                UInt8(ascii: "/"), UInt8(ascii: "="):
                true
            default: false
            }
        }
    }
}

extension Logger.MetadataProvider {
    /// Adds `request_id` to every line logged while a request of siwa's runs, whichever logger logs it: the
    /// request's own, a service's, the store's. ``buildApplication(configuration:apple:store:transport:sealer:clock:host:port:logger:tls:onServerRunning:)``
    /// installs it on the logger it is given; install it on loggers made apart from that one (the store's).
    public static let siwaRequestID = Logger.MetadataProvider {
        guard let log = RequestLog.current else { return [:] }
        return [RequestLog.idKey: .string(log.id)]
    }
}

extension Logger {
    /// This logger with ``Logging/Logger/MetadataProvider/siwaRequestID`` added to its handler's metadata provider,
    /// unless it is there already (a logger made from one that has it).
    public func addingSiwaRequestID() -> Logger {
        if let existing = metadataProvider {
            // A provider cannot be compared: asked within a request, it answers the id when it is there already.
            let probe = RequestLog(id: "probe", client: nil)
            let provides = RequestLog.$current.withValue(probe) { existing.get()[RequestLog.idKey] != nil }
            if provides { return self }
        }
        let provider: Logger.MetadataProvider =
            metadataProvider.map { .multiplex([$0, .siwaRequestID]) ?? .siwaRequestID } ?? .siwaRequestID
        var logger = self
        // Assigned from a typed value: with the expression on the right, the type checker picked `LogHandler`'s
        // default setter (which ignores the value) over the handler's own.
        logger.handler.metadataProvider = provider
        return logger
    }
}
