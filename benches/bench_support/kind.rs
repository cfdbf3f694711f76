//! The kind of run: a measurement, or a smoke run (`KH_BENCH_SMOKE=1`). The run's stores
//! are its own, named by its kind and by `KH_TEST_TAG` (as the tests' databases are), so
//! that a smoke run beside a measurement, or runs from two checkouts, never share a
//! database, Redis prefix, exchange or queue.

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
