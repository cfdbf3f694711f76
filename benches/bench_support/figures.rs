//! The figures of one measurement: operations, their rate and latency percentiles.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// The figures of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub ops: usize,
    pub ops_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: usize,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Figures {
    pub fn from_hist(h: &Histogram<u64>, ops: usize, errors: usize, elapsed: Duration) -> Self {
        Self {
            ops,
            ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
            p50_ms: h.value_at_quantile(0.50) as f64 / 1000.0,
            p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
            errors,
            note: String::new(),
        }
    }

    /// Field-wise median of rounds.
    pub fn median(all: &[Figures]) -> Self {
        fn med(mut v: Vec<f64>) -> f64 {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        }
        Self {
            ops: all[0].ops,
            ops_per_sec: med(all.iter().map(|f| f.ops_per_sec).collect()),
            p50_ms: med(all.iter().map(|f| f.p50_ms).collect()),
            p99_ms: med(all.iter().map(|f| f.p99_ms).collect()),
            errors: all.iter().map(|f| f.errors).sum(),
            note: all[0].note.clone(),
        }
    }
}
