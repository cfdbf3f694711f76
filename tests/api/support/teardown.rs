//! Teardown of a test app, run when it is dropped, whether the test passed or panicked: the
//! server stops and the test's stores are dropped. A test that passed is also checked for
//! leftovers (undelivered outbox rows, lock keys in Redis) and fails if it left any. Tests
//! run on the multi-threaded runtime so that the teardown can wait for the service there.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;

use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};

use super::app::TestApp;
use super::inspect::poll_until;
use kh_review_testkit::database::drop_database;

impl TestApp {
    /// Stops the server, checks nothing was left behind, and drops this test's stores.
    /// (Dropping the app does the same; this spells it out at the end of a test.)
    pub async fn finish(mut self) {
        self.teardown().await;
    }

    /// Stops the server and drops the stores if owned, without the leftover checks.
    pub async fn stop(mut self) {
        self.checks = false;
        self.teardown().await;
    }

    /// The leftover checks (when wanted and the test has not failed), then the clean-up;
    /// a failed check fails the test after the clean-up. Runs once.
    async fn teardown(&mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        let failed = if self.checks && self.owns_stores && !std::thread::panicking() {
            self.leftovers().await.err()
        } else {
            None
        };
        self.server.stop(true).await;
        let _ = task.await;
        if self.owns_stores {
            self.drop_stores().await;
        }
        if let Some(msg) = failed {
            panic!("{msg}");
        }
    }

    /// Undelivered outbox rows or lock keys left in Redis.
    async fn leftovers(&self) -> Result<(), String> {
        let drained = poll_until(Duration::from_secs(20), || async {
            (self.undelivered().await == 0).then_some(())
        });
        if drained.await.is_none() {
            let undelivered = self.undelivered().await;
            return Err(format!("{undelivered} outbox rows undelivered after 20 s"));
        }
        // A release that failed (Redis slow past its op timeout: a loaded machine) is
        // retried in the background until the key's TTL ends, and counted: then, and only
        // then, its key may outlive the request by that long.
        let mut left = self.lock_keys_left().await;
        let retried = match left.is_empty() {
            true => None,
            // An instance a test stopped answers nothing: none retried.
            false => (self.try_metric("kh_lock_release_retries_total").await).unwrap_or(None),
        };
        if retried.is_some_and(|n| n > 0.0) {
            let within = self.settings.lock.ttl.as_duration() + Duration::from_secs(1);
            let gone = poll_until(within, || async {
                self.lock_keys_left().await.is_empty().then_some(())
            });
            if gone.await.is_some() {
                left.clear();
            }
        }
        if !left.is_empty() {
            return Err(format!(
                "lock keys left behind: {left:?} (releases retried: {retried:?})"
            ));
        }
        // What the test did not read off its queue is checked against /asyncapi.json too
        // (the check panics; caught here so that the clean-up still runs).
        let checked = AssertUnwindSafe(self.take_events()).catch_unwind().await;
        if checked.is_err() {
            return Err(
                "a message left on the test's queue does not match /asyncapi.json (above)".into(),
            );
        }
        Ok(())
    }

    /// Drops the test's database, MongoDB database, exchange, queue and Redis keys.
    async fn drop_stores(&self) {
        self.pg.close().await;
        let _ = drop_database(&self.shared.db_name).await;
        let _ = self.mongo.drop().await;
        let (queue, exchange) = (&self.shared.queue, &self.shared.exchange);
        let _ = self
            .amqp
            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
            .await;
        let _ = (self.amqp)
            .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
            .await;
        if let Ok(mut c) = self.redis.get_multiplexed_async_connection().await {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}*", self.shared.prefix))
                .query_async(&mut c)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query_async(&mut c).await;
            }
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if self.task.is_none() {
            return;
        }
        let handle = tokio::runtime::Handle::current();
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            // Cannot wait for the service here; never panic while a test is unwinding.
            assert!(
                std::thread::panicking(),
                "integration tests run on #[tokio::test(flavor = \"multi_thread\")] so that teardown can wait"
            );
            return;
        }
        tokio::task::block_in_place(|| handle.block_on(self.teardown()));
    }
}
