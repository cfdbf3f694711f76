//! Shutdown: what a signal (SIGTERM, Ctrl-C) does to a serving instance (run by
//! `startup::Application::run_until`), in order, all within
//! `shutdown.grace_secs` of the signal:
//!
//! 1. `/readyz` answers 503 `draining` at once, and every answer carries `Connection:
//!    close`, while requests (in flight and new) are still served for `shutdown.drain_secs`:
//!    a load balancer's health check sees the instance go before it stops accepting.
//! 2. The listener closes; requests in flight finish (actix's shutdown timeout is what is
//!    left of the grace after the drain).
//! 3. The background tasks stop (the dispatcher after its batch), the waiting done marks
//!    are written, the AMQP connection and the pool close: with what is left of the grace.
//!
//! It must never stop accepting before the drain is over, nor let a second signal or a
//! slow dependency keep the process beyond its grace.

use std::time::Duration;

use serde::Deserialize;
use serde_with::{serde_as, DurationSeconds};
use tokio::time::Instant;

/// `[shutdown]`: how an instance goes away.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ShutdownSettings {
    /// How long, after the signal, requests are still accepted while `/readyz` says 503.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "drain_secs")]
    pub drain: Duration,
    /// The whole time from the signal to the exit.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "grace_secs")]
    pub grace: Duration,
}

impl Default for ShutdownSettings {
    fn default() -> Self {
        Self {
            drain: Duration::from_secs(5),
            grace: Duration::from_secs(30),
        }
    }
}

impl ShutdownSettings {
    /// The least time left, after the drain, for requests in flight and the tasks.
    const LEAST_AFTER_DRAIN: Duration = Duration::from_secs(2);

    pub fn check(&self, bad: &mut impl FnMut(&'static str, &str)) {
        if self.grace < self.drain + Self::LEAST_AFTER_DRAIN {
            bad(
                "shutdown.grace_secs",
                "must be at least shutdown.drain_secs + 2 (requests in flight and the background tasks need time after the drain)",
            );
        }
    }

    /// How long requests in flight get once the listener is closed: the grace less the
    /// drain and a second kept for the tasks and the pools.
    pub fn in_flight(&self) -> Duration {
        self.grace
            .saturating_sub(self.drain)
            .saturating_sub(Duration::from_secs(1))
    }
}

/// When the process must be gone, counted from the signal (a monotonic clock).
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(grace: Duration) -> Self {
        Self(Instant::now() + grace)
    }

    /// What is left of it, never less than `floor` (so a closing step is never given zero).
    pub fn left(&self, floor: Duration) -> Duration {
        self.0.saturating_duration_since(Instant::now()).max(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_must_cover_the_drain_and_what_follows() {
        let mut problems = Vec::new();
        let s = ShutdownSettings {
            drain: Duration::from_secs(5),
            grace: Duration::from_secs(6),
        };
        s.check(&mut |key, _| problems.push(key));
        assert_eq!(problems, ["shutdown.grace_secs"]);
        let mut problems = Vec::new();
        ShutdownSettings::default().check(&mut |key, _| problems.push(key));
        assert!(problems.is_empty());
    }

    #[test]
    fn in_flight_requests_get_the_grace_less_the_drain_and_a_second() {
        let s = ShutdownSettings::default();
        assert_eq!(s.in_flight(), Duration::from_secs(24));
    }
}
