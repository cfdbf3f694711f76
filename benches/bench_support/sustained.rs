//! Sustained load: approvals at concurrency 64 for a minute while the outbox backlog is
//! sampled from the service's own `kh_outbox_backlog` every second; then the time the
//! backlog takes to drain once the load stops.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{drive_for, env_size, sized, BenchEnv, Report, Service};

/// What the sustained load showed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sustained {
    pub throughput: f64,
    pub max_backlog: i64,
    pub drain_secs: f64,
}

pub async fn sustained_row(
    report: &mut Report,
    env: &BenchEnv,
    svc: &Service,
) -> anyhow::Result<Sustained> {
    let secs = env_size("KH_BENCH_SUSTAIN_SECS", 60, 1) as u64;
    // Room for 1,600 approvals/s for the minute: 60,000 ran out once the service sustained
    // 1,000/s (the build before sustained 991/s).
    let supply = sized(100_000, 2_000);
    let reviews = Arc::new(env.make_pending(supply).await?);
    env.purge_queue().await?;
    let max = Arc::new(AtomicI64::new(0));
    let stop = CancellationToken::new();
    let sampler = sample_backlog(
        BenchEnv::probe(env.http.clone(), svc.base.clone()),
        max.clone(),
        stop.clone(),
    );
    let approver = env.approver(svc);
    let f = drive_for(64, Duration::from_secs(secs), supply, move |i| {
        let (approver, reviews) = (approver.clone(), reviews.clone());
        async move { anyhow::Ok(approver.approve(reviews[i]).await? == reqwest::StatusCode::OK) }
    })
    .await?;
    let stopped = Instant::now();
    anyhow::ensure!(
        f.errors == 0,
        "{} approvals failed under sustained load",
        f.errors
    );
    anyhow::ensure!(f.ops < supply, "the benchmark ran out of pending reviews");
    let deadline = stopped + Duration::from_secs(120);
    let probe = BenchEnv::probe(env.http.clone(), svc.base.clone());
    while probe.backlog().await? > 0 {
        anyhow::ensure!(Instant::now() < deadline, "the backlog did not drain");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drain_secs = stopped.elapsed().as_secs_f64();
    stop.cancel();
    let _ = sampler.await;
    env.expect_queue(f.ops).await?;
    let out = Sustained {
        throughput: f.ops_per_sec,
        max_backlog: max.load(Ordering::Relaxed),
        drain_secs,
    };
    let mut row = f.clone();
    row.note = format!(
        "{secs} s; outbox backlog at most {} rows (sampled every second), drained {:.2} s after the load stopped",
        out.max_backlog, out.drain_secs
    );
    report.row("sustained approvals over HTTP", 64, &row, None);
    Ok(out)
}

/// Every second until `stop`: the backlog, into `max` if larger.
fn sample_backlog(
    probe: Probe,
    max: Arc<AtomicI64>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        while !stop.is_cancelled() {
            every.tick().await;
            if let Ok(n) = probe.backlog().await {
                max.fetch_max(n, Ordering::Relaxed);
            }
        }
    })
}

/// Reads figures off a service's `/metrics`.
pub struct Probe {
    http: reqwest::Client,
    base: String,
}

impl BenchEnv {
    pub fn probe(http: reqwest::Client, base: String) -> Probe {
        Probe { http, base }
    }
}

impl Probe {
    /// `kh_outbox_backlog`.
    pub async fn backlog(&self) -> anyhow::Result<i64> {
        Ok(self.metric("kh_outbox_backlog").await? as i64)
    }

    /// The value of the metric `name` (one without labels).
    pub async fn metric(&self, name: &str) -> anyhow::Result<f64> {
        let text = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await?
            .text()
            .await?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| anyhow::anyhow!("no {name} in /metrics"))
    }
}
