//! Supervision of the background tasks (the outbox's projection and publish loops, the
//! purger, the Redis breaker's prober). Each runs in a task of its own; a panic, or a
//! return before shutdown, is logged with the task's name, counted
//! (`kh_task_restarts_total{task}`), and the task is started again after a capped
//! exponential backoff. At shutdown every task is signalled (the cancellation token it was
//! given) and joined within a deadline; one still running then is aborted.
//!
//! A layer of its own below every other, like `breaker`: it imports nothing of the crate.
//! It must never restart a task after shutdown, nor let a task's panic reach anyone else.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The wait before a failed task starts again: `first`, doubling per failure in a row, at
/// most `max`. A run that lasted longer than `max` starts the count again.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            first: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    fn after(&self, failures_in_a_row: u32) -> Duration {
        let exp = 2u32.saturating_pow(failures_in_a_row.min(20));
        self.first.saturating_mul(exp).min(self.max)
    }
}

/// How often each task was restarted; every supervised task is listed, from 0.
#[derive(Debug, Default)]
pub struct TaskRestarts {
    counts: Mutex<BTreeMap<&'static str, u64>>,
}

impl TaskRestarts {
    fn register(&self, task: &'static str) {
        self.counts
            .lock()
            .expect("poisoned")
            .entry(task)
            .or_insert(0);
    }

    fn count(&self, task: &'static str) {
        *self
            .counts
            .lock()
            .expect("poisoned")
            .entry(task)
            .or_insert(0) += 1;
    }

    /// Each task's name and restarts, by name.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let counts = self.counts.lock().expect("poisoned");
        counts.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// The test hook of the background tasks: make one panic once, at once. Inert unless built
/// enabled (`server.test_hooks`, which start-up refuses in production).
#[derive(Debug, Default)]
pub struct TaskFaults {
    enabled: bool,
    armed: Mutex<HashSet<String>>,
    changed: Notify,
}

impl TaskFaults {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Makes the running `task` panic once; false (and nothing happens) unless enabled.
    pub fn panic_once(&self, task: &str) -> bool {
        if !self.enabled {
            return false;
        }
        self.armed
            .lock()
            .expect("poisoned")
            .insert(task.to_string());
        self.changed.notify_waiters();
        true
    }

    /// Returns when `task` is to panic (never unless enabled).
    async fn strike(&self, task: &str) {
        if !self.enabled {
            return std::future::pending().await;
        }
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.armed.lock().expect("poisoned").remove(task) {
                return;
            }
            changed.await;
        }
    }
}

/// Runs the background tasks and restarts the ones that fail.
pub struct Supervisor {
    shutdown: CancellationToken,
    backoff: Backoff,
    handles: Mutex<Vec<(&'static str, JoinHandle<()>)>>,
    restarts: Arc<TaskRestarts>,
    faults: Arc<TaskFaults>,
    live: Arc<AtomicUsize>,
}

/// Counts a supervised task as live until it is dropped (ended or aborted).
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Supervisor {
    /// Tasks stopped by `shutdown`; `faults` are the test hook, off unless `test_hooks`.
    pub fn new(shutdown: CancellationToken, backoff: Backoff, test_hooks: bool) -> Self {
        Self {
            shutdown,
            backoff,
            handles: Mutex::new(Vec::new()),
            restarts: Arc::default(),
            faults: Arc::new(TaskFaults::new(test_hooks)),
            live: Arc::default(),
        }
    }

    /// Runs `task` (given the shutdown token) under supervision as `name`.
    pub fn spawn<F, Fut>(&self, name: &'static str, task: F)
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.restarts.register(name);
        self.live.fetch_add(1, Ordering::SeqCst);
        let live = Live(self.live.clone());
        let run = Run {
            name,
            shutdown: self.shutdown.clone(),
            backoff: self.backoff,
            restarts: self.restarts.clone(),
            faults: self.faults.clone(),
        };
        let handle = tokio::spawn(async move {
            let _live = live;
            run.supervise(task).await;
        });
        self.handles.lock().expect("poisoned").push((name, handle));
    }

    pub fn restarts(&self) -> Arc<TaskRestarts> {
        self.restarts.clone()
    }

    pub fn faults(&self) -> &TaskFaults {
        &self.faults
    }

    /// Supervised tasks that have not ended.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Signals every task, waits for each until `deadline` has passed, and aborts the
    /// ones still running then.
    pub async fn stop(&self, deadline: Duration) {
        self.shutdown.cancel();
        let handles = std::mem::take(&mut *self.handles.lock().expect("poisoned"));
        let end = tokio::time::Instant::now() + deadline;
        for (name, handle) in handles {
            let abort = handle.abort_handle();
            if tokio::time::timeout_at(end, handle).await.is_err() {
                tracing::warn!(
                    task = name,
                    ?deadline,
                    "background task did not stop in time: aborted"
                );
                abort.abort();
            }
        }
        tracing::info!("background tasks stopped");
    }
}

/// What one supervised task needs to run and restart.
struct Run {
    name: &'static str,
    shutdown: CancellationToken,
    backoff: Backoff,
    restarts: Arc<TaskRestarts>,
    faults: Arc<TaskFaults>,
}

impl Run {
    async fn supervise<F, Fut>(self, task: F)
    where
        F: Fn(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let name = self.name;
        let mut failures = 0;
        loop {
            tracing::debug!(task = name, "background task started");
            let started = Instant::now();
            let run = async {
                tokio::select! {
                    biased;
                    _ = self.faults.strike(name) => panic!("test hook: task {name} panics"),
                    _ = task(self.shutdown.clone()) => {}
                }
            };
            let ended = AssertUnwindSafe(run).catch_unwind().await;
            if self.shutdown.is_cancelled() {
                return;
            }
            match ended {
                Ok(()) => tracing::error!(task = name, "background task returned: restarting it"),
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(task = name, panic = %why, "background task panicked: restarting it");
                }
            }
            self.restarts.count(name);
            if started.elapsed() > self.backoff.max {
                failures = 0;
            }
            let wait = self.backoff.after(failures);
            failures += 1;
            tokio::select! {
                _ = self.shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Backoff {
        Backoff {
            first: Duration::from_millis(5),
            max: Duration::from_millis(40),
        }
    }

    async fn until(what: &str, check: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(5);
        while !check() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn restarts_of(s: &Supervisor, task: &str) -> u64 {
        let all = s.restarts().snapshot();
        all.iter().find(|(n, _)| *n == task).map_or(0, |(_, c)| *c)
    }

    #[tokio::test]
    async fn a_task_that_panics_or_returns_is_counted_and_restarted() {
        let s = Supervisor::new(CancellationToken::new(), quick(), false);
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        s.spawn("flaky", move |stop| {
            let n = r.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => panic!("first run"),
                    1 => {} // an unexpected return
                    _ => stop.cancelled().await,
                }
            }
        });
        until("a third run", || runs.load(Ordering::SeqCst) >= 3).await;
        assert_eq!(restarts_of(&s, "flaky"), 2);
        s.stop(Duration::from_secs(1)).await;
        assert_eq!(s.live(), 0, "joined");
        assert_eq!(runs.load(Ordering::SeqCst), 3, "no restart after shutdown");
    }

    #[tokio::test]
    async fn a_task_that_ignores_shutdown_is_aborted_at_the_deadline() {
        let s = Supervisor::new(CancellationToken::new(), quick(), false);
        s.spawn("stuck", |_| std::future::pending::<()>());
        s.spawn("polite", |stop| async move { stop.cancelled().await });
        let started = Instant::now();
        s.stop(Duration::from_millis(50)).await;
        until("both to end", || s.live() == 0).await;
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test]
    async fn the_panic_hook_is_inert_unless_enabled() {
        let off = Supervisor::new(CancellationToken::new(), quick(), false);
        off.spawn("loop", |stop| async move { stop.cancelled().await });
        assert!(!off.faults().panic_once("loop"));
        let on = Supervisor::new(CancellationToken::new(), quick(), true);
        on.spawn("loop", |stop| async move { stop.cancelled().await });
        assert!(on.faults().panic_once("loop"));
        until("the restart", || restarts_of(&on, "loop") == 1).await;
        assert_eq!(restarts_of(&off, "loop"), 0);
        assert_eq!(restarts_of(&on, "loop"), 1, "once");
        off.stop(Duration::from_secs(1)).await;
        on.stop(Duration::from_secs(1)).await;
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = quick();
        assert_eq!(b.after(0), Duration::from_millis(5));
        assert_eq!(b.after(2), Duration::from_millis(20));
        assert_eq!(b.after(30), Duration::from_millis(40));
    }
}
