//! What the use-case layer counts: committed transitions by type, and how long passing the
//! outer-lock gate took by outcome. Exposed as Prometheus collectors that `web::metrics`
//! registers.

use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};

/// Latency buckets, in seconds, of every latency histogram of the service.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

pub struct ReviewStats {
    transitions: IntCounterVec,
    lock_acquire: HistogramVec,
}

impl Default for ReviewStats {
    fn default() -> Self {
        Self::new()
    }
}

impl ReviewStats {
    pub fn new() -> Self {
        Self {
            transitions: IntCounterVec::new(
                Opts::new("kh_transitions_total", "Committed transitions by type"),
                &["type"],
            )
            .expect("valid metric"),
            lock_acquire: HistogramVec::new(
                HistogramOpts::new(
                    "kh_lock_acquire_duration_seconds",
                    "Time to pass the outer-lock gate, by outcome",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["outcome"],
            )
            .expect("valid metric"),
        }
    }

    pub fn transition(&self, kind: &str) {
        self.transitions.with_label_values(&[kind]).inc();
    }

    pub fn lock_acquire(&self, outcome: &str, elapsed: Duration) {
        self.lock_acquire
            .with_label_values(&[outcome])
            .observe(elapsed.as_secs_f64());
    }

    /// The collectors to register with a Prometheus registry.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.transitions.clone()),
            Box::new(self.lock_acquire.clone()),
        ]
    }
}
