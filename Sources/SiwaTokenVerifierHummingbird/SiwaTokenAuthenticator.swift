import HTTPTypes
public import Hummingbird
import NIOCore
public import SiwaTokenVerifier

/// A request context that can carry the claims of a verified siwa access token.
public protocol SiwaAuthenticatedRequestContext: RequestContext {
    /// The verified token's claims; `nil` when the request carried none.
    var siwaClaims: SiwaTokenClaims? { get set }
}

/// Hummingbird middleware that verifies `Authorization: Bearer <siwa access token>` with a ``SiwaTokenVerifier`` and
/// puts the claims in the context.
///
/// A token that fails a check is answered 401 with `WWW-Authenticate: Bearer error="invalid_token"` and siwa's error
/// body `{"error": "invalid_token", "message": …}` naming the check (never the token); with `required`, so is a request
/// without one. siwa's keys being unreachable (and no key known) answers 503.
///
/// ```swift
/// struct AppContext: SiwaAuthenticatedRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var siwaClaims: SiwaTokenClaims?
///     init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
/// }
/// let router = Router(context: AppContext.self)
/// router.group("api").add(middleware: SiwaTokenAuthenticator(verifier: verifier))
///     .get("me") { _, context in context.siwaClaims!.subject }
/// ```
public struct SiwaTokenAuthenticator<Context: SiwaAuthenticatedRequestContext>: RouterMiddleware {
    public let verifier: SiwaTokenVerifier
    /// Whether a request without a bearer token is refused (`true`) or passed on with no claims (`false`).
    public let required: Bool

    public init(verifier: SiwaTokenVerifier, required: Bool = true) {
        self.verifier = verifier
        self.required = required
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            guard required else { return try await next(request, context) }
            return Self.refusal(.unauthorized, "invalid_token", "the request has no bearer token", bearer: nil)
        }
        guard header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return Self.refusal(
                .unauthorized,
                "invalid_token",
                "the Authorization header is not a bearer token",
                bearer: nil
            )
        }
        var context = context
        do {
            context.siwaClaims = try await verifier.verify(String(header.dropFirst(7)))
        } catch {
            if error.code == .keysUnavailable {
                return Self.refusal(.serviceUnavailable, "keys_unavailable", error.message, bearer: nil)
            }
            return Self.refusal(
                .unauthorized,
                "invalid_token",
                "\(error.code): \(error.message)",
                bearer: "invalid_token"
            )
        }
        return try await next(request, context)
    }

    /// siwa's error body, with the bearer challenge of RFC 6750 §3.
    static func refusal(
        _ status: HTTPResponse.Status,
        _ code: String,
        _ message: String,
        bearer error: String?
    ) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if status == .unauthorized {
            headers[.wwwAuthenticate] = error.map { "Bearer error=\"\($0)\"" } ?? "Bearer"
        }
        let body = "{\"error\":\(Self.quoted(code)),\"message\":\(Self.quoted(message))}"
        return Response(status: status, headers: headers, body: .init(byteBuffer: .init(string: body)))
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
