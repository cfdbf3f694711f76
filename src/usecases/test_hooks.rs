//! Fault injection for tests: hooks that pause, freeze or fail a transition at a named
//! point of its path. A use case reaches them in one way only, `hooks.at(Point)`, which does
//! nothing unless a test turned a hook on: `TestHooks::default()`, all off, is what every
//! request carries unless `server.test_hooks` is on (refused in production). The HTTP layer
//! turns them on from request headers (`web::test_hooks`).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use crate::lock::lease::Lease;
use crate::store::StoreError;

/// The tokens of `signal_after_commit` whose COMMIT has returned, in this process.
static COMMITTED: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// Whether a request carrying `signal_after_commit = token` has seen its COMMIT return.
pub fn commit_signalled(token: u64) -> bool {
    COMMITTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&token)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestHooks {
    /// Pause after the row locks are taken, right before the lease check and COMMIT.
    pub pause_before_commit: Option<Duration>,
    /// Pause after the outer lock is taken, before the transaction begins.
    pub pause_after_lock: Option<Duration>,
    /// Pause right after COMMIT, before the delivery attempt.
    pub pause_after_commit: Option<Duration>,
    /// Stop renewing the lease, as if the whole process were frozen.
    pub suspend_renewal: bool,
    /// Report a (retryable) failure after a successful COMMIT, as a lost reply would.
    pub fail_after_commit: bool,
    /// Record this token once COMMIT has returned here (see [`commit_signalled`]): a test can
    /// then act after the instance learned of its COMMIT, not only after the database
    /// made it visible (which comes a little earlier).
    pub signal_after_commit: Option<u64>,
    /// Who delivers the outbox row of the change.
    pub delivery: Delivery,
    /// Pause an audit verify scan this request starts before it reads anything, so that
    /// calls made meanwhile find it running.
    pub pause_before_scan: Option<Duration>,
}

/// Who delivers a change's outbox row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Delivery {
    /// The committing request, right after COMMIT (as in production).
    #[default]
    Inline,
    /// Nobody right away, as if the instance died after COMMIT: the row is the
    /// dispatchers' once the request's lease on it ends.
    Skipped,
    /// The background dispatchers at once, as while inline delivery is paused after a
    /// dependency failed.
    Dispatchers,
}

/// A point on a change's path where a test may step in.
#[derive(Clone, Copy)]
pub enum Point<'a> {
    /// The outer lock is taken (the lease, or none when Redis was skipped); the
    /// transaction has not begun.
    Locked(Option<&'a Lease>),
    /// The write is done, uncommitted; the lease check and COMMIT come next.
    Uncommitted,
    /// COMMIT is done; the delivery comes next.
    Committed,
}

impl TestHooks {
    /// What the hooks ask for at `point`: a pause, a frozen lease, or, after COMMIT, the
    /// failure a lost reply looks like (a retryable 503). Nothing unless a hook is on.
    pub async fn at(&self, point: Point<'_>) -> Result<(), StoreError> {
        let pause = match point {
            Point::Locked(lease) => {
                if let (true, Some(lease)) = (self.suspend_renewal, lease) {
                    lease.suspend_renewal();
                }
                self.pause_after_lock
            }
            Point::Uncommitted => self.pause_before_commit,
            Point::Committed => {
                if let Some(token) = self.signal_after_commit {
                    COMMITTED
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(token);
                }
                if self.fail_after_commit {
                    return Err(StoreError::TimedOut(Duration::ZERO));
                }
                self.pause_after_commit
            }
        };
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
        Ok(())
    }

    /// The lease a committing request takes on its outbox row (`wanted`), as the hooks
    /// leave it: none when the dispatchers are to deliver at once.
    pub fn own_outbox(&self, wanted: Option<Duration>) -> Option<Duration> {
        wanted.filter(|_| self.delivery != Delivery::Dispatchers)
    }

    /// Whether the committing request delivers its row itself.
    pub fn delivers_inline(&self) -> bool {
        self.delivery == Delivery::Inline
    }
}
