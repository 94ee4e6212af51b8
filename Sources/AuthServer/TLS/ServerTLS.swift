import Foundation
import HummingbirdCore
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
public import ServiceLifecycle

/// The server's own TLS: a certificate chain and key read from PEM files, TLS 1.2 and newer, read again when the files
/// change or on SIGHUP (``Reloader``), so that a renewed certificate (certbot, cert-manager) takes effect without a
/// restart. New connections use the newest certificate; open ones keep theirs. A reload that fails (a half-written file,
/// a key that does not match) keeps the previous certificate and is logged.
public final class ServerTLS: Sendable {
    public let certificateFile: String
    public let keyFile: String
    private let state: NIOLockedValueBox<(context: NIOSSLContext, stamp: FileStamps)>

    /// The stamps of both files: what tells a reload that there is something new.
    struct FileStamps: Equatable {
        var certificate: FileStamp?
        var key: FileStamp?

        init(certificateFile: String, keyFile: String) {
            certificate = FileStamp(certificateFile)
            key = FileStamp(keyFile)
        }
    }

    /// A certificate or key that cannot be used, naming the file.
    public struct Failure: Error, CustomStringConvertible {
        public let file: String
        public let reason: String
        public var description: String { "\(file): \(reason)" }
    }

    /// Reads the files; throws ``Failure`` naming the file that cannot be used.
    public init(certificateFile: String, keyFile: String) throws(Failure) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        let stamp = FileStamps(certificateFile: certificateFile, keyFile: keyFile)
        self.state = NIOLockedValueBox((try Self.makeContext(certificateFile, keyFile), stamp))
    }

    /// The context new connections use.
    var context: NIOSSLContext { state.withLockedValue { $0.context } }

    /// Reads the files again if they changed since the last read (or always, when `force`); returns whether the
    /// certificate was replaced.
    @discardableResult
    public func reload(force: Bool = false) throws(Failure) -> Bool {
        let stamp = FileStamps(certificateFile: certificateFile, keyFile: keyFile)
        if !force, state.withLockedValue({ $0.stamp == stamp }) { return false }
        let context = try Self.makeContext(certificateFile, keyFile)
        state.withLockedValue { $0 = (context, stamp) }
        return true
    }

    private static func makeContext(_ certificateFile: String, _ keyFile: String) throws(Failure) -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw Failure(file: certificateFile, reason: "cannot read a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else { throw Failure(file: certificateFile, reason: "holds no certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw Failure(file: keyFile, reason: "cannot read a PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw Failure(file: keyFile, reason: "does not fit the certificate in \(certificateFile) (\(error))")
        }
    }

    /// Reloads the certificate on SIGHUP and when its files change (checked every `interval`).
    public struct Reloader: Service {
        let tls: ServerTLS
        let interval: Duration
        let logger: Logger

        public init(tls: ServerTLS, interval: Duration, logger: Logger) {
            self.tls = tls
            self.interval = interval
            self.logger = logger
        }

        public func run() async throws {
            await ReloadLoop(interval: interval) { force, why in reload(force: force, why: why) }.run()
        }

        private func reload(force: Bool, why: String) {
            do {
                if try tls.reload(force: force) {
                    logger.info(
                        "reloaded the TLS certificate",
                        metadata: ["why": "\(why)", "file": "\(tls.certificateFile)"]
                    )
                }
            } catch {
                logger.error("kept the previous TLS certificate: \(error)")
            }
        }
    }
}

/// A connection's TLS, with the newest certificate of ``ServerTLS``, in front of the HTTP channel.
struct ReloadingTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let tls: ServerTLS

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension ReloadingTLSChannel: HTTPChannelHandler where Base: HTTPChannelHandler {
    var responder: HTTPChannelHandler.Responder { base.responder }
}
