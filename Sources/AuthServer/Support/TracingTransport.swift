import AppleSignIn
import HTTPTypes
import Tracing

/// With tracing on, a client span around each call to Apple (`POST /auth/token`, `GET /auth/keys`), a child of the
/// span that made it, whose W3C trace context goes to Apple in `traceparent` (and `tracestate`), so that a traced
/// Apple (the emulator, a proxy that traces) continues the trace. Made here, around the transport the application is
/// given, so that `AppleSignIn` stays free of the tracing API; a retried call is a span per attempt.
///
/// The span is named `<method> <path>` and carries only the method, Apple's host, the path, the status and the error
/// code: the request's body holds the client secret and the code or token, and never goes near it.
struct TracingTransport: HTTPTransport {
    let base: any HTTPTransport
    let tracer: any Tracer

    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        let path = request.path.map { String($0.prefix { $0 != "?" }) } ?? ""
        let span = tracer.startSpan(
            "\(request.method.rawValue) \(path)",
            context: InstrumentationContext.current ?? .topLevel,
            ofKind: .client
        )
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            if let authority = request.authority { attributes["server.address"] = authority }
            attributes["url.path"] = path
        }
        var request = request
        tracer.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
        do {
            let answer = try await base.send(request, body: body, timeout: timeout)
            span.attributes["http.response.status_code"] = Int(answer.response.status.code)
            if answer.response.status.kind == .serverError { span.setStatus(SpanStatus(code: .error)) }
            span.end()
            return answer
        } catch {
            span.attributes["error.type"] =
                (error as? AppleSignInError)?.code.description ?? String(describing: type(of: error))
            span.setStatus(SpanStatus(code: .error))
            span.end()
            throw error
        }
    }
}

/// Sets a trace-context header in an outgoing request's fields, replacing any value it had.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
