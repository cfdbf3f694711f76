//! `[telemetry]` in `config/default.toml`: where traces go (nowhere unless set), and how
//! many.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP collector's base URL (`http://127.0.0.1:4318`); spans are posted to
    /// `{otlp_endpoint}/v1/traces` as protobuf. Unset or empty: nothing is exported (trace
    /// context is still continued and sent on with every event).
    pub otlp_endpoint: Option<String>,
    /// `service.name` of every span.
    pub service_name: String,
    /// The share of new traces recorded (0.0 to 1.0); a request that brings a
    /// `traceparent` follows its caller's sampling decision instead.
    pub sampling_ratio: f64,
    /// Spans are sent in batches at least this often.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "export_interval_ms")]
    pub export_interval: Duration,
    /// One export gives up after this long (the spans of that batch are dropped).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "export_timeout_ms")]
    pub export_timeout: Duration,
    /// Spans waiting to be sent; beyond this, new spans are dropped rather than slowing
    /// requests down.
    pub max_queued_spans: usize,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: "kh-review".into(),
            sampling_ratio: 1.0,
            export_interval: Duration::from_millis(1000),
            export_timeout: Duration::from_millis(5000),
            max_queued_spans: 4096,
        }
    }
}

impl TelemetrySettings {
    /// The endpoint spans are exported to, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.otlp_endpoint
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
    }

    /// Reports each invalid key to `bad`.
    pub fn check(&self, bad: &mut impl FnMut(&'static str, &str)) {
        if let Some(url) = self.endpoint() {
            let parsed = reqwest::Url::parse(url).ok();
            let ok = parsed.is_some_and(|u| {
                matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.query().is_none()
            });
            if !ok {
                bad(
                    "telemetry.otlp_endpoint",
                    "must be an http:// or https:// URL (the OTLP/HTTP collector, e.g. http://127.0.0.1:4318)",
                );
            }
        }
        if self.service_name.trim().is_empty() {
            bad("telemetry.service_name", "must not be empty");
        }
        if !(0.0..=1.0).contains(&self.sampling_ratio) {
            bad("telemetry.sampling_ratio", "must be between 0.0 and 1.0");
        }
        if self.export_interval.is_zero() {
            bad("telemetry.export_interval_ms", "must be greater than zero");
        }
        if self.export_timeout.is_zero() {
            bad("telemetry.export_timeout_ms", "must be greater than zero");
        }
        if self.max_queued_spans == 0 {
            bad("telemetry.max_queued_spans", "must be at least 1");
        }
    }
}
