import HTTPTypes
import Tracing

extension AppleHTTP {
    /// A client span around one call to Apple (retries included), from the process's tracer
    /// (`InstrumentationSystem`): a no-op span until a tracing backend is bootstrapped, so a library user without one
    /// pays next to nothing. Its context goes to Apple in `traceparent` (``inject(_:into:)``).
    ///
    /// The span is named `<method> <path>` (`POST /auth/token`, `GET /auth/keys`) and carries only the method, Apple's
    /// host, the path, the status and the error code: the request's body holds the client secret and the code or
    /// token, and never goes near it.
    static func beginSpan(for request: HTTPRequest) -> any Span {
        let path = request.path ?? ""
        let span = startSpan("\(request.method.rawValue) \(path)", ofKind: .client)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["server.address"] = request.authority
            attributes["url.path"] = path
        }
        return span
    }

    /// Ends `span` with what Apple answered, or the error the call became.
    static func endSpan(
        _ span: any Span,
        _ outcome: Result<HTTPTransportResponse, AppleSignInError>,
        attempts: Int
    ) {
        if attempts > 1 { span.attributes["http.request.resend_count"] = attempts - 1 }
        switch outcome {
        case .success(let answer):
            span.attributes["http.response.status_code"] = Int(answer.response.status.code)
            if answer.response.status.kind == .serverError { span.setStatus(SpanStatus(code: .error)) }
        case .failure(let error):
            span.attributes["error.type"] = error.code.description
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    /// Writes `span`'s trace context (`traceparent`, and `tracestate` when there is one) into `request`, so that a
    /// traced Apple (the emulator, a proxy that traces) continues the trace.
    static func inject(_ span: any Span, into request: inout HTTPRequest) {
        InstrumentationSystem.instrument.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
    }
}

/// Sets a trace-context header in an outgoing request's fields, replacing any value it had.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
