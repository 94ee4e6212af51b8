/// Where a sign-in came from, kept with its session for the operator console: the browser's or app's `User-Agent`
/// and the client's address (the peer, or the address a trusted proxy names: ``TrustedProxies``).
struct SessionOrigin: Sendable {
    var userAgent: String?
    var clientAddress: String?

    init(userAgent: String? = nil, clientAddress: String? = nil) {
        self.userAgent = userAgent
        self.clientAddress = clientAddress
    }
}
