import Crypto
import HTTPTypes

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The issuer's signing keys, read through OpenID Connect discovery: `<issuer>/.well-known/openid-configuration`
/// names `jwks_uri`, and the key set there holds the P-256 keys by `kid`.
///
/// One fetch at a time: callers that need the keys while a fetch runs wait for it instead of starting their own.
actor SiwaKeySet {
    let issuer: String
    let transport: any SiwaKeyTransport
    let timeout: Duration
    /// The most often the set is fetched again for a `kid` it lacks (a flood of tokens with made-up `kid`s costs one
    /// fetch per interval, not one per token).
    let minimumRefetchInterval: TimeInterval
    /// How long a fetched set is used before it is fetched again (keys rotate; retired ones leave the set).
    let maximumAge: TimeInterval

    private var keys: [String: P256.Signing.PublicKey] = [:]
    private var jwksURL: String?
    /// The last fetch that succeeded, and the last one tried.
    private var fetchedAt: Date?
    private var attemptedAt: Date?
    private var inFlight: Task<Void, any Error>?

    init(
        issuer: String,
        transport: any SiwaKeyTransport,
        timeout: Duration,
        minimumRefetchInterval: TimeInterval,
        maximumAge: TimeInterval
    ) {
        self.issuer = issuer
        self.transport = transport
        self.timeout = timeout
        self.minimumRefetchInterval = minimumRefetchInterval
        self.maximumAge = maximumAge
    }

    /// The key with `kid`: from the cached set while it is younger than ``maximumAge``, else from a new fetch; a `kid`
    /// the set lacks fetches it again, at most once per ``minimumRefetchInterval``. When a fetch fails, a key already
    /// known is still used (the issuer being down does not refuse every token); an unknown one is refused.
    func key(_ kid: String, now: Date) async throws(SiwaTokenError) -> P256.Signing.PublicKey {
        let known = keys[kid]
        if let known, let fetchedAt, now.timeIntervalSince(fetchedAt) < maximumAge { return known }
        // A fetch already running is waited for (it may bring the key); else a new one, unless the last was too recent
        // (also for a known key of a stale set: while the issuer is down, one attempt per interval, not per token).
        let mayFetch = attemptedAt.map { now.timeIntervalSince($0) >= minimumRefetchInterval } ?? true
        if inFlight != nil || mayFetch {
            do {
                try await refresh(now: now)
            } catch {
                if let known { return known }
                throw error
            }
        }
        guard let key = keys[kid] else {
            throw SiwaTokenError(.unknownKey, "the issuer's key set has no key '\(kid)'")
        }
        return key
    }

    /// Fetches discovery (once) and the key set, or waits for the fetch already running.
    private func refresh(now: Date) async throws(SiwaTokenError) {
        let task: Task<Void, any Error>
        if let running = inFlight {
            task = running
        } else {
            attemptedAt = now
            task = Task { try await self.fetch(now: now) }
            inFlight = task
        }
        do {
            try await task.value
        } catch let error as SiwaTokenError {
            throw error
        } catch {
            throw SiwaTokenError(.keysUnavailable, "\(error)")
        }
    }

    private func fetch(now: Date) async throws {
        defer { inFlight = nil }
        let jwks: String
        if let known = jwksURL {
            jwks = known
        } else {
            jwks = try await discover()
            jwksURL = jwks
        }
        keys = try Self.keys(try await get(jwks, what: "key set"))
        fetchedAt = now
    }

    /// Reads the discovery document: its `issuer` must be the issuer asked for (OpenID Connect Discovery §4.3).
    private func discover() async throws -> String {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let document = try await get(base + "/.well-known/openid-configuration", what: "discovery document")
        guard let discovery = try? JSONDecoder().decode(Discovery.self, from: Data(document)) else {
            throw SiwaTokenError(
                .keysUnavailable,
                "the discovery document is not a JSON object with issuer and jwks_uri"
            )
        }
        guard discovery.issuer == issuer else {
            throw SiwaTokenError(
                .keysUnavailable,
                "the discovery document names issuer '\(discovery.issuer)', not '\(issuer)'"
            )
        }
        let jwks = discovery.jwksURI
        guard jwks.hasPrefix("https://") || jwks.hasPrefix("http://") else {
            throw SiwaTokenError(.keysUnavailable, "the discovery document's jwks_uri is not an http(s) URL")
        }
        return jwks
    }

    /// The discovery fields read.
    private struct Discovery: Decodable {
        var issuer: String
        var jwksURI: String

        enum CodingKeys: String, CodingKey {
            case issuer
            case jwksURI = "jwks_uri"
        }
    }

    private func get(_ url: String, what: String) async throws -> [UInt8] {
        guard let parsed = URL(string: url), let scheme = parsed.scheme, let host = parsed.host else {
            throw SiwaTokenError(.keysUnavailable, "the \(what)'s URL '\(url)' is not an absolute URL")
        }
        let authority = parsed.port.map { "\(host):\($0)" } ?? host
        var path = parsed.path.isEmpty ? "/" : parsed.path
        if let query = parsed.query { path += "?" + query }
        var request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
        request.headerFields[.accept] = "application/json"
        let answer: (response: HTTPResponse, body: [UInt8])
        do {
            answer = try await transport.send(request, timeout: timeout)
        } catch {
            throw SiwaTokenError(.keysUnavailable, "fetching the \(what) from \(url) failed: \(error)")
        }
        guard answer.response.status == .ok else {
            throw SiwaTokenError(.keysUnavailable, "the \(what) at \(url) answered \(answer.response.status.code)")
        }
        return answer.body
    }

    /// The P-256 signing keys of a JWKS, by `kid`; other keys (RSA, encryption keys) are skipped.
    static func keys(_ body: [UInt8]) throws -> [String: P256.Signing.PublicKey] {
        guard let set = try? JSONDecoder().decode(KeySet.self, from: Data(body)) else {
            throw SiwaTokenError(.keysUnavailable, "the key set is not a JSON Web Key Set")
        }
        var keys: [String: P256.Signing.PublicKey] = [:]
        for jwk in set.keys {
            guard jwk.kty == "EC", jwk.crv == "P-256", jwk.use.map({ $0 == "sig" }) ?? true,
                jwk.alg.map({ $0 == "ES256" }) ?? true,
                let kid = jwk.kid,
                let x = jwk.x.flatMap(SiwaBase64URL.decode), x.count == 32,
                let y = jwk.y.flatMap(SiwaBase64URL.decode), y.count == 32,
                let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { continue }
            keys[kid] = key
        }
        return keys
    }

    /// A JSON Web Key Set; every member optional, so that a key of another kind is skipped, not fatal.
    private struct KeySet: Decodable {
        struct Key: Decodable {
            var kty: String?
            var crv: String?
            var use: String?
            var alg: String?
            var kid: String?
            var x: String?
            var y: String?
        }
        var keys: [Key]
    }
}

/// Base64url without padding (RFC 4648 §5); `nil` for any other character.
enum SiwaBase64URL {
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        // A lone character (6 bits) cannot end a valid encoding.
        return bits == 6 ? nil : output
    }
}
