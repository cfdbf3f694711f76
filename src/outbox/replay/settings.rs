//! `[replay]` in `config/default.toml`: which queues replays may send to, how fast they
//! send, and how they share the broker and the outbox with live events.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};

#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ReplaySettings {
    /// Run replays in this process (any instance that does takes a replay whose runner
    /// stopped).
    pub run: bool,
    /// At most this many events a second, per replay.
    pub max_per_sec: u32,
    /// At most this many events per batch (published together, then confirmed, then the
    /// cursor moves); a tenth of a second's worth at `max_per_sec` when that is fewer.
    pub batch_size: u32,
    /// How long a runner holds a replay without renewing its lease; after that, any
    /// instance's runner takes it over from its cursor.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "lease_ms")]
    pub lease: Duration,
    /// How often a runner looks for a replay to take (one asked of this instance starts
    /// at once).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "poll_ms")]
    pub poll: Duration,
    /// A replay pauses while an undelivered event written within this is waiting (older
    /// undelivered rows are a backlog, or held back by a parked row: not waited for).
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "live_window_ms")]
    pub live_window: Duration,
    /// The queues a replay may target: each pattern a queue's name, or a prefix followed by
    /// `*` (`kh.*`). Any other queue is refused, existing or not.
    pub allowed_target_queues: Vec<String>,
}

/// The longest queue name RabbitMQ takes, and so the longest pattern.
const MAX_QUEUE_NAME: usize = 255;

impl Default for ReplaySettings {
    fn default() -> Self {
        Self {
            run: true,
            max_per_sec: 200,
            batch_size: 100,
            lease: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            live_window: Duration::from_secs(10),
            allowed_target_queues: vec!["kh.*".into()],
        }
    }
}

impl ReplaySettings {
    /// Events per batch: `batch_size`, or a tenth of a second at `max_per_sec` if fewer.
    pub fn batch(&self) -> i64 {
        i64::from(self.batch_size.min(self.max_per_sec / 10).max(1))
    }

    /// Whether a replay may send to `queue`: a pattern names it, or is a prefix of it
    /// followed by `*`.
    pub fn allows_target(&self, queue: &str) -> bool {
        self.allowed_target_queues
            .iter()
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => queue.starts_with(prefix),
                None => queue == p,
            })
    }

    /// What is wrong with these settings, by key.
    pub fn problems(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        if self.max_per_sec == 0 {
            out.push(("replay.max_per_sec", "must be greater than zero"));
        }
        if self.batch_size == 0 {
            out.push(("replay.batch_size", "must be greater than zero"));
        }
        if self.lease < Duration::from_millis(500) {
            out.push(("replay.lease_ms", "must be at least 500"));
        }
        if self.poll.is_zero() {
            out.push(("replay.poll_ms", "must be greater than zero"));
        }
        let key = "replay.allowed_target_queues";
        if self.allowed_target_queues.is_empty() {
            out.push((
                key,
                "must name at least one queue or prefix (such as \"kh.*\")",
            ));
        }
        let bad_pattern = |p: &String| {
            let name = p.strip_suffix('*').unwrap_or(p);
            p.is_empty()
                || p.len() > MAX_QUEUE_NAME
                || name.contains('*')
                || !name.bytes().all(|b| b.is_ascii_graphic())
        };
        if self.allowed_target_queues.iter().any(bad_pattern) {
            out.push((
                key,
                "each pattern must be a queue name or a prefix followed by a single trailing \
                 * (1 to 255 printable ASCII characters, no spaces)",
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_at_most_a_tenth_of_a_second() {
        let mut s = ReplaySettings::default();
        assert_eq!(s.batch(), 20, "200 a second: 20 a batch");
        s.max_per_sec = 100_000;
        assert_eq!(s.batch(), 100, "batch_size caps it");
        s.max_per_sec = 5;
        assert_eq!(s.batch(), 1);
        assert!(s.problems().is_empty());
        s.max_per_sec = 0;
        assert_eq!(s.problems()[0].0, "replay.max_per_sec");
    }

    #[test]
    fn target_queues_are_allowed_by_name_or_by_prefix() {
        let mut s = ReplaySettings::default();
        assert!(s.allows_target("kh.search-indexer"));
        assert!(s.allows_target("kh."));
        for refused in [
            "billing",
            "kh",
            "khan.jobs",
            "KH.indexer",
            "x.kh.indexer",
            "",
        ] {
            assert!(!s.allows_target(refused), "{refused}");
        }
        s.allowed_target_queues = vec!["indexer".into(), "search.*".into()];
        assert!(s.allows_target("indexer"));
        assert!(!s.allows_target("indexer-2"), "a name without * is exact");
        assert!(s.allows_target("search.v2"));
        assert!(!s.allows_target("kh.search-indexer"));
        assert!(s.problems().is_empty());
        s.allowed_target_queues = vec!["*".into()];
        assert!(
            s.allows_target("anything"),
            "an explicit * allows every queue"
        );
        assert!(s.problems().is_empty());
        for bad in [
            vec![],
            vec!["".into()],
            vec!["a*b".into()],
            vec!["a b*".into()],
        ] {
            s.allowed_target_queues = bad.clone();
            let keys: Vec<_> = s.problems().into_iter().map(|(k, _)| k).collect();
            assert_eq!(keys, ["replay.allowed_target_queues"], "{bad:?}");
        }
    }
}
