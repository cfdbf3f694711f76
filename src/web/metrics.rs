//! Prometheus metrics. HTTP metrics are recorded here as requests finish; the review
//! layer's collectors are registered here; lock, breaker and dispatcher counters live as
//! atomics in their own modules and are read at scrape time, with the outbox backlog
//! queried from PostgreSQL then (at most once per `server.probe_cache_ms`, see
//! `usecases::Probes`).
//!
//! Names follow Prometheus conventions: `_total` counters, `_seconds` in base units.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

use crate::breaker::BreakerState;
use crate::lock::gate::LockStats;
use crate::outbox::DispatchStats;
use crate::store::PoolFigures;
use crate::usecases::{Probes, ReviewStats, LATENCY_BUCKETS};

pub struct HttpMetrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
}

impl HttpMetrics {
    /// HTTP metrics, and the use-case layer's `stats` registered alongside.
    pub fn new(stats: &ReviewStats) -> Self {
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
        let own: Vec<Box<dyn Collector>> = vec![
            Box::new(http_requests.clone()),
            Box::new(http_duration.clone()),
        ];
        for c in own.into_iter().chain(stats.collectors()) {
            registry.register(c).expect("unique metric names");
        }
        Self {
            registry,
            http_requests,
            http_duration,
        }
    }

    /// Registers more collectors (a background task's counters) beside the others.
    pub fn register(&self, collectors: Vec<Box<dyn Collector>>) {
        for c in collectors {
            self.registry.register(c).expect("unique metric names");
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

    /// Reads what `probes` count now and renders every metric.
    pub async fn scrape(&self, probes: &Probes) -> String {
        let outbox = probes.outbox().await;
        self.render(&Snapshot {
            locks: probes.lock_stats(),
            breaker: probes.breaker_state(),
            dispatch: probes.dispatch_stats(),
            backlog: outbox.backlog,
            parked: outbox.parked,
            reverification: outbox.reverification,
            pool: probes.pool(),
            task_restarts: probes.task_restarts(),
        })
    }

    /// Renders every metric in the text exposition format.
    pub fn render(&self, snapshot: &Snapshot<'_>) -> String {
        let scrape = Registry::new();
        lock_metrics(&scrape, snapshot.locks, snapshot.breaker);
        dispatch_metrics(&scrape, snapshot.dispatch, snapshot.backlog);
        parked_metrics(&scrape, snapshot.parked);
        reverification_metrics(&scrape, snapshot.reverification);
        pool_metrics(&scrape, &snapshot.pool);
        task_metrics(&scrape, &snapshot.task_restarts);
        let mut families = self.registry.gather();
        families.extend(scrape.gather());
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&families, &mut out)
            .expect("text encoding cannot fail");
        String::from_utf8(out).expect("text format is UTF-8")
    }
}

fn register(scrape: &Registry, c: impl Collector + 'static) {
    scrape.register(Box::new(c)).expect("unique metric names");
}

fn counter(scrape: &Registry, name: &str, help: &str, v: &AtomicU64) {
    let c = IntCounter::new(name, help).expect("valid metric");
    c.inc_by(v.load(Ordering::Relaxed));
    register(scrape, c);
}

fn lock_metrics(scrape: &Registry, l: &LockStats, breaker: BreakerState) {
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
    register(scrape, acquisitions);
    let renewals = "kh_lock_renewals_total";
    counter(scrape, renewals, "Successful lease renewals", &l.renewals);
    let retries = "kh_lock_renewal_retries_total";
    let help = "Lease renewals that timed out or failed to reach Redis and were retried";
    counter(scrape, retries, help, &l.renewal_retries);
    let late = "kh_lock_release_retries_total";
    let help = "Lock releases that timed out or failed to reach Redis, given back in the background until the key's TTL ends";
    counter(scrape, late, help, &l.release_retries);
    let lost = "kh_lock_leases_lost_total";
    counter(scrape, lost, "Leases lost before release", &l.lost);
    let state = IntGauge::new(
        "kh_redis_circuit_breaker_state",
        "Redis circuit breaker: 0 closed, 1 half-open, 2 open",
    )
    .expect("valid metric");
    state.set(match breaker {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    });
    register(scrape, state);
}

fn dispatch_metrics(scrape: &Registry, d: &DispatchStats, backlog: Option<(i64, f64)>) {
    for (name, help, v) in [
        (
            "kh_events_published_total",
            "Events confirmed by RabbitMQ",
            &d.published,
        ),
        (
            "kh_projections_total",
            "MongoDB projection writes",
            &d.projected,
        ),
        (
            "kh_projection_failures_total",
            "Failed MongoDB projection writes",
            &d.projection_failures,
        ),
        (
            "kh_publish_failures_total",
            "Failed RabbitMQ publishes (including unroutable and unconfirmed)",
            &d.publish_failures,
        ),
        (
            "kh_projection_group_commands_total",
            "MongoDB update commands sent with the projection updates grouped",
            &d.projection_groups.commands,
        ),
        (
            "kh_projection_group_updates_total",
            "Projection updates sent in grouped commands (per command: the grouping)",
            &d.projection_groups.updates,
        ),
    ] {
        counter(scrape, name, help, v);
    }
    if let Some((rows, age)) = backlog {
        let g = IntGauge::new("kh_outbox_backlog", "Outbox rows not yet delivered")
            .expect("valid metric");
        g.set(rows);
        register(scrape, g);
        let a = Gauge::new(
            "kh_outbox_oldest_unsent_age_seconds",
            "Age of the oldest undelivered outbox row",
        )
        .expect("valid metric");
        a.set(age);
        register(scrape, a);
    }
}

/// Parked outbox rows (see `outbox.max_attempts`): each holds back its document's later
/// events until an admin retries or skips it.
fn parked_metrics(scrape: &Registry, parked: Option<(i64, f64)>) {
    let Some((rows, age)) = parked else { return };
    let g = IntGauge::new(
        "kh_outbox_parked",
        "Outbox rows parked after outbox.max_attempts refusals",
    )
    .expect("valid metric");
    g.set(rows);
    register(scrape, g);
    let a = Gauge::new(
        "kh_outbox_parked_oldest_age_seconds",
        "How long the longest-parked outbox row has been parked (0: none)",
    )
    .expect("valid metric");
    a.set(age);
    register(scrape, a);
}

/// The re-verification scheduler's lag: documents past their `verify_by` it has not opened
/// a re-verification on yet, and how long the oldest has waited.
fn reverification_metrics(scrape: &Registry, due: Option<(i64, f64)>) {
    let Some((rows, lag)) = due else { return };
    let g = IntGauge::new(
        "kh_reverification_due",
        "Published documents past their verify_by with no re-verification opened yet",
    )
    .expect("valid metric");
    g.set(rows);
    register(scrape, g);
    let a = Gauge::new(
        "kh_reverification_lag_seconds",
        "How long the oldest document due for re-verification has waited for the scheduler (0: none)",
    )
    .expect("valid metric");
    a.set(lag);
    register(scrape, a);
}

/// The PostgreSQL pool: connections held and idle, and how many were handed out.
fn pool_metrics(scrape: &Registry, pool: &PoolFigures) {
    let g = IntGaugeVec::new(
        Opts::new(
            "kh_db_pool_connections",
            "Open PostgreSQL pool connections by state",
        ),
        &["state"],
    )
    .expect("valid metric");
    let idle = pool.idle as i64;
    g.with_label_values(&["idle"]).set(idle);
    g.with_label_values(&["in_use"])
        .set((i64::from(pool.size) - idle).max(0));
    register(scrape, g);
    let a = IntGaugeVec::new(
        Opts::new(
            "kh_db_access_pool_connections",
            "Open connections of the PostgreSQL access pool (each request's read of its \
             caller's memberships) by state",
        ),
        &["state"],
    )
    .expect("valid metric");
    let access_idle = pool.access_idle as i64;
    a.with_label_values(&["idle"]).set(access_idle);
    a.with_label_values(&["in_use"])
        .set((i64::from(pool.access_size) - access_idle).max(0));
    register(scrape, a);
    let c = IntCounter::new(
        "kh_db_pool_acquisitions_total",
        "PostgreSQL connections handed out by the pool (pooled or new)",
    )
    .expect("valid metric");
    c.inc_by(pool.acquired);
    register(scrape, c);
}

/// Restarts of each supervised background task (after a panic or an unexpected return).
fn task_metrics(scrape: &Registry, restarts: &[(&'static str, u64)]) {
    let c = IntCounterVec::new(
        Opts::new(
            "kh_task_restarts_total",
            "Background tasks restarted after a panic or an unexpected return",
        ),
        &["task"],
    )
    .expect("valid metric");
    for (task, n) in restarts {
        c.with_label_values(&[task]).inc_by(*n);
    }
    register(scrape, c);
}

/// What the scrape reads from the rest of the service.
pub struct Snapshot<'a> {
    pub locks: &'a LockStats,
    pub breaker: BreakerState,
    pub dispatch: &'a DispatchStats,
    /// Undelivered outbox rows and the age of the oldest; None when PostgreSQL is down.
    pub backlog: Option<(i64, f64)>,
    /// Parked outbox rows and how long the oldest has been parked; None when PostgreSQL is
    /// down.
    pub parked: Option<(i64, f64)>,
    /// Documents due for re-verification with none opened yet, and how long the oldest has
    /// waited past its `verify_by`; None when PostgreSQL is down.
    pub reverification: Option<(i64, f64)>,
    pub pool: PoolFigures,
    /// Each background task and its restarts.
    pub task_restarts: Vec<(&'static str, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_conventional_names() {
        let stats = ReviewStats::new();
        let m = HttpMetrics::new(&stats);
        m.observe_http(
            "POST",
            "/api/v1/reviews/{id}/approve",
            200,
            Duration::from_millis(3),
        );
        stats.transition("approve");
        let locks = LockStats::default();
        locks.acquired.fetch_add(2, Ordering::Relaxed);
        let text = m.render(&Snapshot {
            locks: &locks,
            breaker: BreakerState::Open,
            dispatch: &DispatchStats::default(),
            backlog: Some((3, 1.5)),
            parked: Some((1, 42.0)),
            reverification: Some((2, 7.5)),
            pool: PoolFigures {
                size: 5,
                access_size: 2,
                access_idle: 1,
                idle: 3,
                acquired: 7,
            },
            task_restarts: vec![("outbox.publisher", 2)],
        });
        assert!(text.contains(
            "http_requests_total{method=\"POST\",route=\"/api/v1/reviews/{id}/approve\",status=\"200\"} 1"
        ));
        assert!(text.contains("kh_lock_acquisitions_total{outcome=\"acquired\"} 2"));
        assert!(text.contains("kh_redis_circuit_breaker_state 2"));
        assert!(text.contains("kh_outbox_backlog 3"));
        assert!(text.contains("kh_outbox_parked 1"));
        assert!(text.contains("kh_outbox_parked_oldest_age_seconds 42"));
        assert!(text.contains("kh_reverification_due 2"));
        assert!(text.contains("kh_reverification_lag_seconds 7.5"));
        assert!(text.contains("kh_transitions_total{type=\"approve\"} 1"));
        assert!(text.contains("kh_db_pool_connections{state=\"in_use\"} 2"));
        assert!(text.contains("kh_db_access_pool_connections{state=\"in_use\"} 1"));
        assert!(text.contains("kh_db_pool_acquisitions_total 7"));
        assert!(text.contains("kh_task_restarts_total{task=\"outbox.publisher\"} 2"));
        assert!(text.contains("http_request_duration_seconds_bucket"));
    }
}
