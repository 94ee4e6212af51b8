import AppleSignInAsyncHTTPClient
import AsyncHTTPClient
import AuthServer
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sends webhooks with async-http-client: names resolved by `getaddrinfo` (off the cooperative pool), the request
/// connected to the address siwa checked (async-http-client's DNS override, so that TLS still verifies the URL's
/// host), no redirect followed, the answer's body read up to 64 KiB and dropped.
///
/// Each attempt has a client of its own: the override is part of a client's configuration, and a pinned address
/// must not outlive its check.
struct HTTPWebhookTransport: WebhookTransport {
    struct ResolutionFailed: Error, CustomStringConvertible {
        let host: String
        let reason: String
        var description: String { "\(host) does not resolve (\(reason))" }
    }

    func addresses(of host: String, port: Int) async throws -> [String] {
        try await NIOThreadPool.singleton.runIfActive { try Self.resolve(host, port: port) }
    }

    private static func resolve(_ host: String, port: Int) throws -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw ResolutionFailed(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = info.pointee.ai_addr,
                getnameinfo(address, info.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
                    == 0
            {
                let found = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(found) { addresses.append(found) }
            }
            next = info.pointee.ai_next
        }
        return addresses
    }

    func post(
        _ body: [UInt8],
        headers: HTTPFields,
        to url: URL,
        connectingTo address: String,
        timeout: Duration
    ) async throws -> Int {
        var configuration = AsyncHTTPClientTransport.clientConfiguration(connectTimeout: timeout, readTimeout: timeout)
        if let host = url.host, host != address { configuration.dnsOverride = [host: address] }
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .POST
            for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
            request.body = .bytes(body)
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            // The receiver's answer is not kept: its status is what counts.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            try? await client.shutdown()
            return Int(response.status.code)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
