//! Logs and traces. Logs: `tracing` with pretty or JSON output; `RUST_LOG` overrides the
//! level. Traces: the spans of `kh_review` (debug level and up, whatever the log level)
//! become OpenTelemetry spans, in the trace of the request's `traceparent` (W3C Trace
//! Context) or of a new one, exported over OTLP/HTTP when `telemetry.otlp_endpoint` is set
//! (`export.rs`). Nothing here may ever fail a request: a collector that is down loses
//! spans, never time.

mod export;
mod http_client;
mod settings;

use opentelemetry::global;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;
use tracing::{Level, Metadata};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer, Registry};

pub use settings::TelemetrySettings;

/// `[log]` in `config/default.toml`.
#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    /// "pretty" or "json"
    pub format: String,
    pub level: String,
}

/// What [`install`] set up; [`Telemetry::shutdown`] sends the spans still queued.
#[must_use = "shut it down on exit, or the last spans are lost"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exports(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends the queued spans (waiting at most the export timeout) and stops the exporter.
    /// Blocking work, so it runs off the async threads.
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!(error = %e, "trace export: the last spans may be lost");
        }
    }
}

/// Installs the global subscriber once, without trace export; later calls are no-ops
/// (tests build many apps).
pub fn init(settings: &LogSettings) {
    let _ = install(settings, &TelemetrySettings::default());
}

/// Installs the global subscriber (logs, and spans as OpenTelemetry spans), the W3C
/// propagator and the tracer provider `telemetry` describes; once per process: a later
/// call changes nothing and exports nothing.
pub fn install(log: &LogSettings, telemetry: &TelemetrySettings) -> Telemetry {
    let provider = match export::provider(telemetry) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("trace export disabled: {e:#}");
            export::provider(&TelemetrySettings::default()).expect("a provider without export")
        }
    };
    let tracer = provider.tracer("kh-review");
    let spans = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter_fn(traced));
    let installed = tracing_subscriber::registry()
        .with(log_layer(log))
        .with(spans)
        .try_init()
        .is_ok();
    if !installed {
        return Telemetry { provider: None };
    }
    global::set_text_map_propagator(TraceContextPropagator::new());
    global::set_tracer_provider(provider.clone());
    let exports = telemetry.endpoint().is_some();
    if exports {
        // Not the URL itself: it may hold credentials.
        tracing::info!("exporting traces over OTLP/HTTP (telemetry.otlp_endpoint)");
    }
    Telemetry {
        provider: exports.then_some(provider),
    }
}

/// The log output: pretty or JSON to stderr, at the configured level.
fn log_layer(settings: &LogSettings) -> Box<dyn Layer<Registry> + Send + Sync> {
    // The OpenTelemetry crates' own diagnostics ("global tracer provider is set", ...) only
    // from warnings up, unless the level names them: commands such as `token` print their
    // answer alone.
    let level = if settings.level.contains("opentelemetry") {
        settings.level.clone()
    } else {
        format!(
            "{},opentelemetry=warn,opentelemetry_sdk=warn",
            settings.level
        )
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    // Colours only for a person at a terminal, never into a log file or collector.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let layer = fmt::layer().with_ansi(ansi).with_writer(std::io::stderr);
    if settings.format == "json" {
        layer
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(filter)
            .boxed()
    } else {
        layer.with_filter(filter).boxed()
    }
}

/// What becomes part of a trace: the service's own spans from debug level up (the lock,
/// the transaction, the projection and the request's), and its warnings and errors as
/// events on them. Other crates' spans and events stay in the logs only.
fn traced(meta: &Metadata<'_>) -> bool {
    let ours = meta.target() == "kh_review" || meta.target().starts_with("kh_review::");
    let level = if meta.is_span() {
        Level::DEBUG
    } else {
        Level::WARN
    };
    ours && *meta.level() <= level
}
