/// How the emulator POSTs server-to-server notifications to a developer's server. The emulator has no HTTP client of
/// its own (DESIGN.md keeps its imports to hummingbird, jwt-kit and swift-crypto); the composition root supplies one.
public protocol NotificationDelivery: Sendable {
    /// POSTs `body` (JSON) to `url` and returns the HTTP status the receiver answered.
    func post(json body: [UInt8], to url: String) async throws -> Int
}
