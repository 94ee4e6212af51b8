import Tracing

/// Runs `body` inside a span named `name` when there is a tracer (the spans `body` starts are its children), and
/// alone, at the cost of one `nil` check, when tracing is off. A failure marks the span as an error with the code the
/// caller is answered (``AuthServerError/code``) or the error's type: never its message, which may quote input.
func traced<T>(_ tracer: (any Tracer)?, _ name: String, _ body: () async throws -> T) async throws -> T {
    guard let tracer else { return try await body() }
    let span = tracer.startSpan(name, ofKind: .internal)
    do {
        let value = try await InstrumentationContext.$current.withValue(span.context) { try await body() }
        span.end()
        return value
    } catch {
        span.attributes["error.type"] = (error as? AuthServerError)?.code ?? String(describing: type(of: error))
        span.setStatus(SpanStatus(code: .error))
        span.end()
        throw error
    }
}
