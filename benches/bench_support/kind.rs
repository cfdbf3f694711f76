//! The kind of run, and what follows from it. A measurement (`make bench`: the release
//! build, full sizes, every figure the median of 3 rounds after a warm-up round, the report
//! in `target/bench/`), or the smoke run (`make bench-smoke`, `KH_BENCH_SMOKE=1`: the debug
//! build, every group at tiny sizes, one round and no warm-up), which only checks that
//! every group still produces its figures, and writes its report apart
//! (`target/bench/smoke/`), marked as no measurement.
//!
//! Either way the run's stores are its own, named by its kind and by `KH_TEST_TAG` (as the
//! tests' databases are), so that a smoke run beside a measurement, or runs from two
//! checkouts, never share a database, Redis prefix, exchange or queue.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether this is the smoke run (`KH_BENCH_SMOKE=1`).
pub fn smoke() -> bool {
    static SMOKE: OnceLock<bool> = OnceLock::new();
    *SMOKE.get_or_init(|| std::env::var("KH_BENCH_SMOKE").is_ok_and(|v| v == "1"))
}

/// `full` in a measurement, `tiny` in the smoke run.
pub fn sized<T>(full: T, tiny: T) -> T {
    if smoke() {
        tiny
    } else {
        full
    }
}

/// The size the variable `key` sets (`KH_BENCH_PRELOAD`, ...), else [`sized`].
pub fn env_size(key: &str, full: usize, tiny: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| sized(full, tiny))
}

/// Where the report goes: `target/bench/` in the clone, `target/bench/smoke/` for the
/// smoke run.
pub fn report_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    sized(dir.clone(), dir.join("smoke"))
}

/// The names of the run's stores.
pub struct Names {
    /// Its PostgreSQL database, and its MongoDB database.
    pub db: String,
    /// The exchange its services publish to.
    pub exchange: String,
    /// The queue that collects every event of the run.
    pub queue: String,
    /// The queue of the arrival listener (`listen.rs`).
    pub arrivals: String,
    /// The target queue of the replay row.
    pub replay_target: String,
    /// The Redis key prefix of its services (its keys are deleted before and after).
    pub redis_prefix: String,
}

/// `kh_bench`, `kh.bench.events`, `bench:`, ... for a measurement, `kh_bench_smoke`, ... for
/// the smoke run, each with `_<tag>` (`-<tag>`) when `KH_TEST_TAG` is set.
pub fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let tag = kh_review_testkit::database::tag();
        let mut stem = sized("bench", "bench-smoke").to_string();
        if !tag.is_empty() {
            stem = format!("{stem}-{tag}");
        }
        Names {
            db: format!("kh_{}", stem.replace('-', "_")),
            exchange: format!("kh.{stem}.events"),
            queue: format!("kh-{stem}.events"),
            arrivals: format!("kh-{stem}.arrivals"),
            replay_target: format!("kh.{stem}.replay-target"),
            redis_prefix: format!("{stem}:"),
        }
    })
}
