//! The tracer provider: every span gets W3C ids whether or not it is exported; with
//! `telemetry.otlp_endpoint` set, a batch processor sends them over OTLP/HTTP.

use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use opentelemetry_sdk::Resource;

use super::http_client::RuntimeClient;
use super::settings::TelemetrySettings;

/// The provider `settings` describe. With an endpoint it needs a Tokio runtime (the
/// exporter's requests run on it).
pub(super) fn provider(settings: &TelemetrySettings) -> anyhow::Result<SdkTracerProvider> {
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .build();
    let root = Sampler::TraceIdRatioBased(settings.sampling_ratio);
    let mut builder = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_sampler(Sampler::ParentBased(Box::new(root)));
    if let Some(endpoint) = settings.endpoint() {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("trace export needs the async runtime"))?;
        let client = RuntimeClient::new(settings.export_timeout, runtime)?;
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .with_timeout(settings.export_timeout)
            .build()?;
        let batch = BatchConfigBuilder::default()
            .with_scheduled_delay(settings.export_interval)
            .with_max_queue_size(settings.max_queued_spans)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        builder = builder.with_span_processor(processor);
    }
    Ok(builder.build())
}
