import FIDOServerCore
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry traces for `mauth server` (`observability.tracing`): swift-otel's tracer, made the process's tracer
/// once, with its exporter running beside the server until the server stops, then flushed. The standard
/// `OTEL_EXPORTER_OTLP_*` and `OTEL_TRACES_SAMPLER*` variables still override the file, as swift-otel reads them.
struct ServerTracing {
    let group: ServiceGroup
    let task: Task<Void, any Error>

    static func start(_ settings: ServerConfiguration.Observability.Tracing, logger: Logger) throws -> ServerTracing {
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = settings.endpoint
        configuration.traces.otlpExporter.protocol = settings.protocol == "http/json" ? .httpJSON : .httpProtobuf
        // Checked to be 0...1 by the configuration, so the sampler exists.
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(ratio: settings.sampleRatio) {
            configuration.traces.sampler = sampler
        }
        configuration.propagators = [.traceContext]
        configuration.diagnosticLogger = .custom(logger)
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        let group = ServiceGroup(services: [service], logger: logger)
        return ServerTracing(group: group, task: Task { try await group.run() })
    }

    /// The trace ID of the request being served, from swift-otel's logging metadata (nil outside a span).
    static let traceID: @Sendable () -> String? = {
        OTel.makeLoggingMetadataProvider().get()["trace_id"].map { "\($0)" }
    }

    /// Exports what is queued and stops the exporter.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
