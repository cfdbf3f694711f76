//! The request headers that turn test hooks on (`usecases::TestHooks`). They are read only
//! when `server.test_hooks` is on, which start-up refuses outside `development` and `test`.

use actix_web::HttpRequest;

use crate::usecases::{Delivery, TestHooks};

/// Pause a transition after its row locks, right before the lease check and COMMIT.
pub const PAUSE_BEFORE_COMMIT_HEADER: &str = "x-test-pause-before-commit-ms";
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
/// A token (a u64) recorded once COMMIT has returned (`usecases::commit_signalled`).
pub const SIGNAL_AFTER_COMMIT_HEADER: &str = "x-test-signal-after-commit";

/// Pause an audit verify scan the request starts, before it reads anything.
pub const PAUSE_BEFORE_SCAN_HEADER: &str = "x-test-pause-before-scan-ms";

/// The hooks a request's headers name.
pub fn from_request(req: &HttpRequest) -> TestHooks {
    from_headers(|name| req.headers().get(name).and_then(|v| v.to_str().ok()))
}

/// The hooks named by headers; `header` looks one up by its name. Garbage leaves a hook off.
fn from_headers<'a>(header: impl Fn(&str) -> Option<&'a str>) -> TestHooks {
    let ms = |name: &str| {
        header(name)
            .and_then(|v| v.parse::<u64>().ok())
            .map(std::time::Duration::from_millis)
    };
    let on = |name: &str| header(name) == Some("true");
    let delivery = match (on(SKIP_DISPATCH_HEADER), on(LEAVE_TO_DISPATCHER_HEADER)) {
        (_, true) => Delivery::Dispatchers,
        (true, false) => Delivery::Skipped,
        (false, false) => Delivery::Inline,
    };
    TestHooks {
        pause_before_commit: ms(PAUSE_BEFORE_COMMIT_HEADER),
        pause_after_lock: ms(PAUSE_AFTER_LOCK_HEADER),
        pause_after_commit: ms(PAUSE_AFTER_COMMIT_HEADER),
        suspend_renewal: on(SUSPEND_RENEWAL_HEADER),
        fail_after_commit: on(FAIL_AFTER_COMMIT_HEADER),
        signal_after_commit: header(SIGNAL_AFTER_COMMIT_HEADER).and_then(|v| v.parse().ok()),
        delivery,
        pause_before_scan: ms(PAUSE_BEFORE_SCAN_HEADER),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn headers_turn_hooks_on_and_garbage_leaves_them_off() {
        let hooks = from_headers(|name| match name {
            PAUSE_BEFORE_COMMIT_HEADER => Some("250"),
            PAUSE_AFTER_LOCK_HEADER => Some("soon"),
            SKIP_DISPATCH_HEADER => Some("true"),
            SUSPEND_RENEWAL_HEADER => Some("yes"),
            _ => None,
        });
        assert_eq!(hooks.pause_before_commit, Some(Duration::from_millis(250)));
        assert_eq!(hooks.pause_after_lock, None);
        assert_eq!(hooks.delivery, Delivery::Skipped);
        assert!(!hooks.suspend_renewal);
        assert!(!hooks.fail_after_commit);
        assert_eq!(from_headers(|_| None), TestHooks::default());
    }
}
