import AuthServer
import Logging
import OTel
import ServiceLifecycle

extension TracingSettings {
    /// Bootstraps the process's tracer (`InstrumentationSystem`, once per process) with swift-otel's OTLP/HTTP exporter (protobuf)
    /// and returns the service that sends the finished spans in batches. Run it in the same service group as the
    /// server, before it: a group stops its services in reverse order, so the exporter stops last and sends the final
    /// spans.
    ///
    /// Only siwa's settings configure it: swift-otel's own `OTEL_*` variables are not read, so that what `siwa doctor`
    /// checked is what runs. W3C trace context is the one propagator; logs and metrics stay siwa's own.
    /// - Parameter logger: where the exporter's own warnings go (a collector that does not answer).
    func bootstrap(logger: Logger) throws -> some Service {
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.resourceAttributes = ["service.version": SiwaVersion.current]
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.exporter = .otlp
        // A caller's sampled flag decides for its trace; of the traces siwa starts, this share is kept.
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(
            ratio: sampleRatio
        ) {
            configuration.traces.sampler = sampler
        }
        configuration.traces.otlpExporter.endpoint = endpoint
        // Binary protobuf, which every collector reads (swift-otel's JSON writes the ids in base64, not OTLP's hex).
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        return try OTel.bootstrap(configuration: configuration, environment: [:])
    }
}
