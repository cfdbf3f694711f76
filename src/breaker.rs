//! A circuit breaker around an optional dependency: after `threshold` consecutive failures
//! it opens and every request skips the dependency instead of paying its timeout; after
//! `open_for` one request is let through as a probe, and its outcome closes or re-opens it.
//! A probe that never reports (its request was cancelled: a client that went away drops the
//! handler's future) does not keep the breaker half-open: after another `open_for` the next
//! request is the probe.
//!
//! Used for Redis by the lock gate (degraded mode: the row lock alone) and for MongoDB reads
//! by the projection (the body served from PostgreSQL). A layer of its own below every
//! other: it imports nothing of the crate, so both may use it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

/// Whether a caller may use the protected dependency now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    Allowed,
    /// The one call that tests whether the dependency is back.
    Probe,
    Rejected,
}

#[derive(Debug)]
enum Inner {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// A probe is out; another is handed out if it has not reported by `until`.
    HalfOpen {
        until: Instant,
    },
}

#[derive(Debug)]
pub struct CircuitBreaker {
    inner: Mutex<Inner>,
    threshold: u32,
    open_for: Duration,
}

impl CircuitBreaker {
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner::Closed { failures: 0 }),
            threshold: threshold.max(1),
            open_for,
        }
    }

    pub fn permit(&self) -> Permit {
        let mut inner = self.inner.lock().expect("breaker poisoned");
        match *inner {
            Inner::Closed { .. } => Permit::Allowed,
            Inner::Open { until } | Inner::HalfOpen { until } if Instant::now() >= until => {
                *inner = Inner::HalfOpen {
                    until: Instant::now() + self.open_for,
                };
                Permit::Probe
            }
            Inner::Open { .. } | Inner::HalfOpen { .. } => Permit::Rejected,
        }
    }

    pub fn on_success(&self) {
        *self.inner.lock().expect("breaker poisoned") = Inner::Closed { failures: 0 };
    }

    /// Returns true when this failure opened the breaker.
    pub fn on_failure(&self) -> bool {
        let mut inner = self.inner.lock().expect("breaker poisoned");
        let open = match *inner {
            Inner::Closed { failures } => failures + 1 >= self.threshold,
            Inner::HalfOpen { .. } | Inner::Open { .. } => true,
        };
        *inner = if open {
            Inner::Open {
                until: Instant::now() + self.open_for,
            }
        } else {
            match *inner {
                Inner::Closed { failures } => Inner::Closed {
                    failures: failures + 1,
                },
                _ => unreachable!(),
            }
        };
        open
    }

    pub fn state(&self) -> BreakerState {
        match *self.inner.lock().expect("breaker poisoned") {
            Inner::Closed { .. } => BreakerState::Closed,
            Inner::Open { .. } => BreakerState::Open,
            Inner::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_and_probes_once() {
        let b = CircuitBreaker::new(2, Duration::from_millis(20));
        assert_eq!(b.permit(), Permit::Allowed);
        assert!(!b.on_failure());
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.on_failure());
        assert_eq!(b.permit(), Permit::Rejected);
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.permit(), Permit::Probe);
        assert_eq!(b.permit(), Permit::Rejected, "only one probe at a time");
        b.on_failure();
        assert_eq!(b.state(), BreakerState::Open);
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.permit(), Permit::Probe);
        b.on_success();
        assert_eq!(b.permit(), Permit::Allowed);
    }

    #[test]
    fn a_probe_that_never_reports_is_replaced_after_open_for() {
        let b = CircuitBreaker::new(1, Duration::from_millis(20));
        b.on_failure();
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(b.permit(), Permit::Probe); // its request is cancelled: no outcome
        assert_eq!(b.permit(), Permit::Rejected);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(
            b.permit(),
            Permit::Probe,
            "a new probe, not half-open for good"
        );
        b.on_success();
        assert_eq!(b.permit(), Permit::Allowed);
    }

    #[test]
    fn success_resets_the_failure_count() {
        let b = CircuitBreaker::new(2, Duration::from_secs(60));
        b.on_failure();
        b.on_success();
        b.on_failure();
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
