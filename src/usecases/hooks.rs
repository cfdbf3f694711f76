//! Fault injection for tests: per-request hooks that pause, freeze or fail a transition at
//! a chosen step. The HTTP layer reads them from request headers, and only when
//! `server.test_hooks` is on (refused in production); otherwise every hook is off.

use std::time::Duration;

use crate::store::StoreError;

/// Pause a transition after its row locks, right before the lease check and COMMIT.
pub const PAUSE_HEADER: &str = "x-test-pause-before-commit-ms";
/// Pause a transition after the outer lock is taken, before its transaction begins.
pub const PAUSE_AFTER_LOCK_HEADER: &str = "x-test-pause-after-lock-ms";
/// Stop renewing the lease, as if the whole process were frozen.
pub const SUSPEND_RENEWAL_HEADER: &str = "x-test-suspend-renewal";
/// Skip the delivery attempt after COMMIT, as if the instance died right after it.
pub const SKIP_DISPATCH_HEADER: &str = "x-test-skip-dispatch";
/// Leave the outbox row to the background dispatchers, as while inline delivery is paused
/// after a dependency failed.
pub const LEAVE_TO_DISPATCHER_HEADER: &str = "x-test-leave-to-dispatcher";
/// Pause a transition right after its COMMIT, before the delivery attempt.
pub const PAUSE_AFTER_COMMIT_HEADER: &str = "x-test-pause-after-commit-ms";
/// Answer 503 after a successful COMMIT, as if the reply had been lost.
pub const FAIL_AFTER_COMMIT_HEADER: &str = "x-test-fail-after-commit";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    pub pause_before_commit: Option<Duration>,
    pub pause_after_lock: Option<Duration>,
    pub pause_after_commit: Option<Duration>,
    pub suspend_renewal: bool,
    pub skip_dispatch: bool,
    pub leave_to_dispatcher: bool,
    /// Report a (retryable) failure after a successful COMMIT, as a lost reply would.
    pub fail_after_commit: bool,
}

impl Hooks {
    /// The hooks named by a request's headers; `header` looks one up by its name.
    pub fn from_headers<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Self {
        let ms = |name: &str| {
            header(name)
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        Hooks {
            pause_before_commit: ms(PAUSE_HEADER),
            pause_after_lock: ms(PAUSE_AFTER_LOCK_HEADER),
            pause_after_commit: ms(PAUSE_AFTER_COMMIT_HEADER),
            suspend_renewal: header(SUSPEND_RENEWAL_HEADER) == Some("true"),
            skip_dispatch: header(SKIP_DISPATCH_HEADER) == Some("true"),
            leave_to_dispatcher: header(LEAVE_TO_DISPATCHER_HEADER) == Some("true"),
            fail_after_commit: header(FAIL_AFTER_COMMIT_HEADER) == Some("true"),
        }
    }

    /// Right after a COMMIT: the failure a lost reply would look like (a retryable 503),
    /// when `fail_after_commit` asks for it.
    pub fn after_commit(&self) -> Result<(), StoreError> {
        if self.fail_after_commit {
            return Err(StoreError::TimedOut(Duration::ZERO));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_turn_hooks_on_and_garbage_leaves_them_off() {
        let hooks = Hooks::from_headers(|name| match name {
            PAUSE_HEADER => Some("250"),
            PAUSE_AFTER_LOCK_HEADER => Some("soon"),
            SKIP_DISPATCH_HEADER => Some("true"),
            SUSPEND_RENEWAL_HEADER => Some("yes"),
            _ => None,
        });
        assert_eq!(hooks.pause_before_commit, Some(Duration::from_millis(250)));
        assert_eq!(hooks.pause_after_lock, None);
        assert!(hooks.skip_dispatch);
        assert!(!hooks.suspend_renewal);
        assert!(!hooks.fail_after_commit);
        assert_eq!(Hooks::from_headers(|_| None), Hooks::default());
    }
}
