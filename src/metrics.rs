//! Prometheus metrics. HTTP and transition metrics are recorded as they happen; lock,
//! breaker and dispatcher counters live as atomics in their own modules and are read at
//! scrape time, with the outbox backlog queried from PostgreSQL then.
//!
//! Names follow Prometheus conventions: `_total` counters, `_seconds` in base units.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

use crate::lock::breaker::BreakerState;
use crate::lock::gate::LockStats;
use crate::outbox::DispatchStats;

const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    transitions: IntCounterVec,
    lock_acquire: HistogramVec,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let http_requests = IntCounterVec::new(
            Opts::new("http_requests_total", "HTTP requests by route and status"),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let http_duration = HistogramVec::new(
            HistogramOpts::new("http_request_duration_seconds", "HTTP request latency")
                .buckets(LATENCY_BUCKETS.to_vec()),
            &["method", "route"],
        )
        .expect("valid metric");
        let transitions = IntCounterVec::new(
            Opts::new("kh_transitions_total", "Committed transitions by type"),
            &["type"],
        )
        .expect("valid metric");
        let lock_acquire = HistogramVec::new(
            HistogramOpts::new(
                "kh_lock_acquire_duration_seconds",
                "Time to pass the outer-lock gate, by outcome",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["outcome"],
        )
        .expect("valid metric");
        for c in [
            Box::new(http_requests.clone()) as Box<dyn Collector>,
            Box::new(http_duration.clone()),
            Box::new(transitions.clone()),
            Box::new(lock_acquire.clone()),
        ] {
            registry.register(c).expect("unique metric names");
        }
        Self {
            registry,
            http_requests,
            http_duration,
            transitions,
            lock_acquire,
        }
    }

    pub fn observe_http(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        self.http_requests
            .with_label_values(&[method, route, &status.to_string()])
            .inc();
        self.http_duration
            .with_label_values(&[method, route])
            .observe(elapsed.as_secs_f64());
    }

    pub fn transition(&self, kind: &str) {
        self.transitions.with_label_values(&[kind]).inc();
    }

    pub fn lock_acquire(&self, outcome: &str, elapsed: Duration) {
        self.lock_acquire
            .with_label_values(&[outcome])
            .observe(elapsed.as_secs_f64());
    }

    /// Renders every metric in the text exposition format.
    pub fn render(&self, snapshot: &Snapshot<'_>) -> String {
        let scrape = Registry::new();
        let counter = |name: &str, help: &str, v: &AtomicU64| {
            let c = IntCounter::new(name, help).expect("valid metric");
            c.inc_by(v.load(Ordering::Relaxed));
            scrape.register(Box::new(c)).expect("unique metric names");
        };
        let l = snapshot.locks;
        let acquisitions = IntCounterVec::new(
            Opts::new(
                "kh_lock_acquisitions_total",
                "Outer-lock attempts by outcome",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        for (outcome, v) in [
            ("acquired", &l.acquired),
            ("contended", &l.contended),
            ("degraded", &l.degraded),
        ] {
            acquisitions
                .with_label_values(&[outcome])
                .inc_by(v.load(Ordering::Relaxed));
        }
        scrape
            .register(Box::new(acquisitions))
            .expect("unique metric names");
        counter(
            "kh_lock_renewals_total",
            "Successful lease renewals",
            &l.renewals,
        );
        counter(
            "kh_lock_leases_lost_total",
            "Leases lost before release",
            &l.lost,
        );
        let breaker = IntGauge::new(
            "kh_redis_circuit_breaker_state",
            "Redis circuit breaker: 0 closed, 1 half-open, 2 open",
        )
        .expect("valid metric");
        breaker.set(match snapshot.breaker {
            BreakerState::Closed => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Open => 2,
        });
        scrape
            .register(Box::new(breaker))
            .expect("unique metric names");
        let d = snapshot.dispatch;
        counter(
            "kh_events_published_total",
            "Events confirmed by RabbitMQ",
            &d.published,
        );
        counter(
            "kh_projections_total",
            "MongoDB projection writes",
            &d.projected,
        );
        counter(
            "kh_projection_failures_total",
            "Failed MongoDB projection writes",
            &d.projection_failures,
        );
        counter(
            "kh_publish_failures_total",
            "Failed RabbitMQ publishes (including unroutable and unconfirmed)",
            &d.publish_failures,
        );
        if let Some((rows, age)) = snapshot.backlog {
            let g = IntGauge::new("kh_outbox_backlog", "Outbox rows not yet delivered")
                .expect("valid metric");
            g.set(rows);
            scrape.register(Box::new(g)).expect("unique metric names");
            let a = Gauge::new(
                "kh_outbox_oldest_unsent_age_seconds",
                "Age of the oldest undelivered outbox row",
            )
            .expect("valid metric");
            a.set(age);
            scrape.register(Box::new(a)).expect("unique metric names");
        }
        let mut families = self.registry.gather();
        families.extend(scrape.gather());
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&families, &mut out)
            .expect("text encoding cannot fail");
        String::from_utf8(out).expect("text format is UTF-8")
    }
}

/// What the scrape reads from the rest of the service.
pub struct Snapshot<'a> {
    pub locks: &'a LockStats,
    pub breaker: BreakerState,
    pub dispatch: &'a DispatchStats,
    /// Undelivered outbox rows and the age of the oldest; None when PostgreSQL is down.
    pub backlog: Option<(i64, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_conventional_names() {
        let m = Metrics::new();
        m.observe_http(
            "POST",
            "/api/v1/reviews/{id}/approve",
            200,
            Duration::from_millis(3),
        );
        m.transition("approve");
        let locks = LockStats::default();
        locks.acquired.fetch_add(2, Ordering::Relaxed);
        let text = m.render(&Snapshot {
            locks: &locks,
            breaker: BreakerState::Open,
            dispatch: &DispatchStats::default(),
            backlog: Some((3, 1.5)),
        });
        assert!(text.contains(
            "http_requests_total{method=\"POST\",route=\"/api/v1/reviews/{id}/approve\",status=\"200\"} 1"
        ));
        assert!(text.contains("kh_lock_acquisitions_total{outcome=\"acquired\"} 2"));
        assert!(text.contains("kh_redis_circuit_breaker_state 2"));
        assert!(text.contains("kh_outbox_backlog 3"));
        assert!(text.contains("kh_transitions_total{type=\"approve\"} 1"));
        assert!(text.contains("http_request_duration_seconds_bucket"));
    }
}
