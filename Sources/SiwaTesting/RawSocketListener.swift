import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP socket listening on `127.0.0.1:port` that accepts nothing: a port another process holds, for the tests of
/// what siwa says when it cannot listen.
///
/// `@unchecked Sendable`: a test closes it once, from the task that made it.
public final class RawSocketListener: @unchecked Sendable {
    private let descriptor: Int32
    private var closed = false

    /// Binds and listens on `127.0.0.1:port`.
    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else {
            closed = true
            throw RawSocketError("socket() failed: errno \(errno)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            let error = errno
            close()
            throw RawSocketError("listening on port \(port) failed: errno \(error)")
        }
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }
}
