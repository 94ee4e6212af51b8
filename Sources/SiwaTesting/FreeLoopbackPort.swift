import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ports this test process has handed out: tests run in parallel, and a port that was free when probed is not
/// handed to a second test before the first one binds it.
private let handedOutPorts = Mutex<Set<Int>>([])

/// A port of 127.0.0.1 that nothing listens on right now, for a server a test starts on a port it must know first (a
/// child process, a configuration file).
///
/// Chosen below Linux's ephemeral range (32768 and up), where the kernel never hands out ports on its own, so that
/// another test's outgoing connection cannot take it before the server binds; a bind attempt checks that no listener
/// has it, and no port is handed out twice in one test process.
/// - Parameter range: where to choose from: the in-process harnesses use the default, the command-line tests
///   `10_000..<20_000`, so that the two never meet.
/// - Throws: ``PortError`` when 50 tries found none.
public func freeLoopbackPort(in range: Range<Int> = 20_000..<32_000) throws -> Int {
    for _ in 0..<50 {
        let port = Int.random(in: range)
        guard handedOutPorts.withLock({ $0.insert(port).inserted }) else { continue }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PortError() }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if bound == 0 { return port }
    }
    throw PortError()
}

/// No free port was found.
public struct PortError: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "could not reserve a free loopback port" }
}
