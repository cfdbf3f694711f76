//! Driving load: `n` operations over `conc` workers (or as many as fit in a time), with
//! their latencies in one histogram, and rounds of such runs reduced to their medians.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use hdrhistogram::Histogram;

use super::figures::Figures;
use super::kind::sized;

/// The rounds a figure is the median of: 3 (1 in the smoke run).
pub fn round_count() -> usize {
    sized(3, 1)
}

/// The warm-up rounds before them, whose figures are left out: 1 (none in the smoke run).
pub fn warm_ups() -> usize {
    sized(1, 0)
}

/// The warm-up rounds, then the median of [`round_count`] rounds.
pub async fn rounds<F, Fut>(mut f: F) -> anyhow::Result<Figures>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Figures>>,
{
    for _ in 0..warm_ups() {
        f().await?;
    }
    let mut all = Vec::new();
    for _ in 0..round_count() {
        all.push(f().await?);
    }
    Ok(Figures::median(&all))
}

/// One measurement of a row, to be run again in every round of [`interleaved`].
pub type Measure<'a> = Box<dyn FnMut() -> BoxFuture<'a, anyhow::Result<Figures>> + 'a>;

/// Rows compared with each other, measured in turns: the warm-ups of each, then
/// [`round_count`] rounds that run each once, in order; the median of each. A machine that slows down
/// half-way through slows every row of the comparison alike, not only the later ones.
pub async fn interleaved(measures: Vec<Measure<'_>>) -> anyhow::Result<Vec<Figures>> {
    interleaved_rounds(measures, round_count()).await
}

/// [`interleaved`] with `rounds` rounds after the warm-ups: for a ratio of two rows close
/// to 1 that a few rounds leave to chance.
pub async fn interleaved_rounds(
    mut measures: Vec<Measure<'_>>,
    rounds: usize,
) -> anyhow::Result<Vec<Figures>> {
    let mut all: Vec<Vec<Figures>> = measures.iter().map(|_| Vec::new()).collect();
    for round in 0..warm_ups() + rounds {
        for (m, figures) in measures.iter_mut().zip(&mut all) {
            let f = m().await?;
            if round >= warm_ups() {
                figures.push(f);
            }
        }
    }
    Ok(all.iter().map(|f| Figures::median(f)).collect())
}

/// How one operation went.
pub enum Rec {
    Ok,
    Failed,
    /// Succeeded but is left out of the latency figures.
    Unrecorded,
}

impl From<bool> for Rec {
    fn from(ok: bool) -> Self {
        if ok {
            Rec::Ok
        } else {
            Rec::Failed
        }
    }
}

/// Runs `n` operations over `conc` workers.
pub async fn drive<F, Fut, R>(conc: usize, n: usize, op: F) -> anyhow::Result<Figures>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<R>> + Send,
    R: Into<Rec>,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (op, next) = (op.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
            let mut errors = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let t = Instant::now();
                let rec: Rec = op(i).await?.into();
                let micros = t.elapsed().as_micros().max(1) as u64;
                match rec {
                    Rec::Ok => h.record(micros).expect("in range"),
                    Rec::Failed => {
                        h.record(micros).expect("in range");
                        errors += 1;
                    }
                    Rec::Unrecorded => {}
                }
            }
            anyhow::Ok((h, errors))
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let mut errors = 0;
    for w in workers {
        let (h, e) = w.await??;
        hist.add(h).expect("same bounds");
        errors += e;
    }
    Ok(Figures::from_hist(&hist, n, errors, started.elapsed()))
}

/// Runs operations over `conc` workers until `time` has passed or `supply` operations were
/// started, whichever comes first. The figures count the operations that ran.
pub async fn drive_for<F, Fut>(
    conc: usize,
    time: Duration,
    supply: usize,
    op: F,
) -> anyhow::Result<Figures>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<bool>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let end = started + time;
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (op, next) = (op.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
            let (mut done, mut errors) = (0usize, 0usize);
            while Instant::now() < end {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= supply {
                    break;
                }
                let t = Instant::now();
                let ok = op(i).await?;
                h.record(t.elapsed().as_micros().max(1) as u64)
                    .expect("in range");
                done += 1;
                errors += usize::from(!ok);
            }
            anyhow::Ok((h, done, errors))
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let (mut done, mut errors) = (0, 0);
    for w in workers {
        let (h, d, e) = w.await??;
        hist.add(h).expect("same bounds");
        done += d;
        errors += e;
    }
    Ok(Figures::from_hist(&hist, done, errors, started.elapsed()))
}
