public import Crypto
import HTTPTypes

/// Seals secrets kept at rest (Apple refresh tokens, access-token signing keys) with AES-GCM under the data key.
public struct DataSealer: Sendable {
    private let key: SymmetricKey

    /// - Parameter key: a 256-bit key from configuration (or generated once and kept by the composition root).
    public init(key: SymmetricKey) {
        self.key = key
    }

    public func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        guard let combined = try AES.GCM.seal(plaintext, using: key).combined else {
            throw AuthServerError(.internalServerError, AuthServerError.Code.internalError, "sealing failed")
        }
        return Array(combined)
    }

    public func open(_ sealed: [UInt8]) throws -> [UInt8] {
        Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key))
    }
}
