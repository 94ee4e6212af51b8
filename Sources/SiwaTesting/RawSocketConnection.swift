import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP connection to 127.0.0.1 on a blocking socket, for requests no HTTP client would send: oversized or
/// half-sent heads, bytes trickled one at a time. Every read has a deadline, so a test never waits longer than it says,
/// and waits on a thread of its own (``offCooperativePool(_:)``), never on one the server's tasks need.
///
/// `@unchecked Sendable`: a test uses each connection from one task at a time; the reads hop to another thread only
/// while that task awaits them.
public final class RawSocketConnection: @unchecked Sendable {
    private let descriptor: Int32
    private var closed = false

    /// Connects to `127.0.0.1:port` from `source`, an address of the loopback range (127.0.0.0/8 is all on the
    /// loopback interface, so `127.0.0.2` is another client to the server).
    public init(port: Int, from source: String = "127.0.0.1") throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else {
            closed = true
            throw RawSocketError("socket() failed: errno \(errno)")
        }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = errno
            // close(), not the bare system call: the deinitializer still runs after a class's initializer throws,
            // and a second close() of the number could close a descriptor someone else (NIO) was given meanwhile.
            close()
            throw RawSocketError("bind() to \(source) failed: errno \(error)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            // close(), not the bare system call: the deinitializer still runs after a class's initializer throws,
            // and a second close() of the number could close a descriptor someone else (NIO) was given meanwhile.
            close()
            throw RawSocketError("connect() to port \(port) failed: errno \(error)")
        }
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        systemClose(descriptor)
    }

    /// Sends `bytes`; `false` when the server has already closed the connection (no SIGPIPE).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { systemSend(descriptor, $0) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the server closes the connection or `timeout` passes; `closedByServer` tells which.
    public func readUntilClosed(timeout: Duration) async throws -> (bytes: [UInt8], closedByServer: Bool) {
        try await offCooperativePool { self.blockingReadUntilClosed(timeout: timeout) }
    }

    /// Reads one HTTP/1.1 response with a `Content-Length` body; `nil` on timeout or when the server closed first.
    public func readResponse(timeout: Duration) async throws -> (status: Int, head: String, body: [UInt8])? {
        try await offCooperativePool { self.blockingReadResponse(timeout: timeout) }
    }

    private func blockingReadUntilClosed(timeout: Duration) -> (bytes: [UInt8], closedByServer: Bool) {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            switch readChunk(deadline: deadline) {
            case .data(let chunk): received += chunk
            case .closed: return (received, true)
            case .timedOut: return (received, false)
            }
        }
    }

    private func blockingReadResponse(timeout: Duration) -> (status: Int, head: String, body: [UInt8])? {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = received.firstRange(of: separator) {
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
                let lines = head.split(separator: "\r\n")
                let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
                let length =
                    lines.lazy.compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                if received.count - end.upperBound >= length {
                    return (status, head, Array(received[end.upperBound..<(end.upperBound + length)]))
                }
            }
            switch readChunk(deadline: deadline) {
            case .data(let chunk): received += chunk
            case .closed, .timedOut: return nil
            }
        }
    }

    private enum Chunk {
        case data([UInt8])
        case closed
        case timedOut
    }

    private func readChunk(deadline: ContinuousClock.Instant) -> Chunk {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { return .timedOut }
        let (seconds, attoseconds) = remaining.components
        let milliseconds = Int32(clamping: seconds * 1_000 + attoseconds / 1_000_000_000_000_000 + 1)
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count > 0 { return .data(Array(buffer[..<count])) }
        return .closed  // 0: orderly close; < 0: reset
    }
}

/// The C calls whose names the connection's own methods shadow.
private func systemClose(_ descriptor: Int32) {
    close(descriptor)
}

private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
}

/// A socket call that failed, with its `errno`.
public struct RawSocketError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
