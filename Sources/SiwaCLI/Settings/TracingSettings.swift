import Foundation

/// `tracing.*` (``SettingsCatalog/Tracing``): where `siwa serve` sends its traces (OTLP over HTTP), under which service
/// name, and what share of the traces it starts. Tracing is on exactly when ``load(from:)`` finds an endpoint.
struct TracingSettings: Equatable {
    /// The OTLP/HTTP traces URL: `SIWA_TRACING_ENDPOINT` as given, or with `/v1/traces` when it has no path.
    var endpoint: String
    /// The `service.name` of every span.
    var serviceName = "siwa"
    /// The share of the traces siwa starts that it records; a caller's sampled flag decides for its own.
    var sampleRatio = 1.0

    /// The tracing settings, or `nil` without `SIWA_TRACING_ENDPOINT` (tracing off, the default): the endpoint alone
    /// turns tracing on, so the other settings may stay in the file while it is off.
    /// - Throws: ``ServerSettings/Problem`` naming the variable of a value the declarations refuse.
    static func load(from source: SettingsSource) throws(ServerSettings.Problem) -> TracingSettings? {
        guard let given = try source.given(\.tracing.endpoint) else { return nil }
        let path = URL(string: given)?.path ?? ""
        let hasPath = !path.isEmpty && path != "/"
        return TracingSettings(
            endpoint: hasPath ? given : (given.hasSuffix("/") ? String(given.dropLast()) : given) + "/v1/traces",
            serviceName: try source.value(\.tracing.serviceName),
            sampleRatio: try source.value(\.tracing.sampleRatio)
        )
    }
}
