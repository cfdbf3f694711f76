//! The replay runner: sends running replays to their target queues in the background, in
//! batches, at most `replay.max_per_sec`, pausing while live events wait. Each batch is
//! published and confirmed, then the replay's cursor moves past it; the runner holds the
//! replay under a lease it renews, so that if its instance dies, any instance's runner takes
//! the replay over and goes on from the cursor (the batch that was in flight is sent again:
//! counted as duplicates). A replay cancelled is seen before the next batch.
//!
//! Never send to any queue but the replay's target, never through the events' exchange.

mod channel;
pub mod message;
mod settings;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::replay::{ReplayMode, ReplayState};
use crate::store::{PgStore, ReplayRecord, StoreError};
pub use channel::{ReplayChannel, SendError};
use message::Outgoing;
pub use settings::ReplaySettings;

use super::{AmqpSettings, EventSettings};

/// Replays one instance runs at the same time (each to its own queue).
const MAX_RUNNING: usize = 4;
/// How long a replay waits before it looks again whether live events still wait.
const YIELD_PAUSE: Duration = Duration::from_millis(5);

pub struct ReplayRunner {
    store: PgStore,
    channel: ReplayChannel,
    settings: ReplaySettings,
    /// This instance, as `claimed_by` names it.
    name: String,
    wake: Notify,
    /// What the CloudEvents headers of the replayed messages say (`[events]`).
    events: EventSettings,
    /// The archive queue (`amqp.bind_queue`): the record of what was published, never a
    /// replay's target, whatever the patterns allow.
    archive_queue: String,
}

/// How a replay's run ended on this instance.
enum Ended {
    /// Done, failed or cancelled: nothing more to do.
    Finished,
    /// No longer ours (cancelled, or taken over), or this instance is stopping.
    LetGo,
}

impl ReplayRunner {
    pub fn new(
        store: PgStore,
        amqp: &AmqpSettings,
        settings: ReplaySettings,
        events: EventSettings,
    ) -> Self {
        Self {
            store,
            events,
            channel: ReplayChannel::from_settings(amqp),
            archive_queue: amqp.bind_queue.clone(),
            settings,
            name: format!("{}-{}", std::process::id(), Uuid::new_v4().simple()),
            wake: Notify::new(),
        }
    }

    /// The queues a replay may target (`replay.allowed_target_queues`), the archive queue
    /// never.
    pub fn allows_target(&self, queue: &str) -> bool {
        queue != self.archive_queue && self.settings.allows_target(queue)
    }

    /// The replays' broker connection (the use case checks a target queue on it).
    pub fn channel(&self) -> &ReplayChannel {
        &self.channel
    }

    /// A replay was asked for here: look for it now rather than at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Takes running replays that no runner holds and runs them, each in a task of its
    /// own, until `shutdown`; then lets each finish its batch and gives it back.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut running = JoinSet::new();
        while !shutdown.is_cancelled() {
            while running.try_join_next().is_some() {}
            let mut took = false;
            if running.len() < MAX_RUNNING {
                match self
                    .store
                    .claim_replay(&self.name, self.settings.lease)
                    .await
                {
                    Ok(Some(replay)) => {
                        tracing::info!(replay_id = %replay.id, queue = %replay.target_queue, sent = replay.sent, takeovers = replay.takeovers, "replay taken");
                        let (this, stop) = (self.clone(), shutdown.clone());
                        running.spawn(async move { this.run_one(replay, stop).await });
                        took = true;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "could not look for replays"),
                }
            }
            if took {
                continue;
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.settings.poll) => {}
            }
        }
        while running.join_next().await.is_some() {}
        self.channel.close().await;
    }

    /// Runs one replay until it ends here; store failures are retried (the lease lapses if
    /// they last, and another instance may take over).
    async fn run_one(&self, mut replay: ReplayRecord, shutdown: CancellationToken) {
        let mut pace = Pace::new(self.settings.max_per_sec);
        loop {
            let step = self.step(&mut replay, &mut pace, &shutdown).await;
            match step {
                Ok(Some(Ended::Finished)) => return,
                Ok(Some(Ended::LetGo)) => {
                    if shutdown.is_cancelled() {
                        let _ = self.store.release_replay(replay.id, &self.name).await;
                    }
                    return;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(replay_id = %replay.id, error = %e, "replay batch failed; retrying");
                    tokio::select! {
                        _ = shutdown.cancelled() => {}
                        _ = tokio::time::sleep(self.settings.poll) => {}
                    }
                }
            }
        }
    }

    /// One batch: wait for live events, read the batch, note it in flight, send it, move
    /// the cursor, keep the pace. None: go on.
    async fn step(
        &self,
        replay: &mut ReplayRecord,
        pace: &mut Pace,
        shutdown: &CancellationToken,
    ) -> Result<Option<Ended>, StoreError> {
        if shutdown.is_cancelled() || !self.yield_to_live(replay, shutdown).await? {
            return Ok(Some(Ended::LetGo));
        }
        let (batch, cursor) = self.batch(replay).await?;
        if batch.is_empty() {
            let id = replay.id;
            self.store
                .finish_replay(id, &self.name, ReplayState::Done, None)
                .await?;
            tracing::info!(replay_id = %id, sent = replay.sent, "replay done");
            return Ok(Some(Ended::Finished));
        }
        let n = batch.len() as i64;
        let (id, lease) = (replay.id, self.settings.lease);
        if !self
            .store
            .renew_replay(id, &self.name, Some(n), lease)
            .await?
        {
            return Ok(Some(Ended::LetGo));
        }
        match self.channel.send(&replay.target_queue, &batch).await {
            Ok(()) => {}
            Err(SendError::Refused(why)) => {
                tracing::error!(replay_id = %id, error = %why, "replay failed");
                let failed = ReplayState::Failed;
                self.store
                    .finish_replay(id, &self.name, failed, Some(&why))
                    .await?;
                return Ok(Some(Ended::Finished));
            }
            Err(SendError::Unavailable(e)) => {
                tracing::warn!(replay_id = %id, error = %format!("{e:#}"), "replay paused: rabbitmq unavailable");
                self.pause(replay, self.settings.poll, shutdown).await?;
                return Ok(None);
            }
        }
        if !self
            .store
            .replay_sent(id, &self.name, cursor, n, lease)
            .await?
        {
            return Ok(Some(Ended::LetGo));
        }
        replay.sent += n;
        replay.cursor_outbox_id = cursor.0.or(replay.cursor_outbox_id);
        replay.cursor_document_id = cursor.1.or(replay.cursor_document_id);
        let wait = pace.after(batch.len());
        self.pause(replay, wait, shutdown).await?;
        Ok(None)
    }

    /// The next batch after the cursor, and the cursor after it.
    async fn batch(
        &self,
        replay: &ReplayRecord,
    ) -> Result<(Vec<Outgoing>, (Option<i64>, Option<Uuid>)), StoreError> {
        let limit = self.settings.batch();
        match replay.mode {
            ReplayMode::History => {
                let rows = self.store.history_batch(replay, limit).await?;
                let last = rows.last().map(|r| r.id);
                let mut out = Vec::with_capacity(rows.len());
                for row in &rows {
                    let m = message::replayed(row, replay.id, &self.events)
                        .map_err(|e| anyhow::anyhow!("outbox row {}: {e}", row.id))?;
                    out.push(m);
                }
                Ok((out, (last, None)))
            }
            ReplayMode::Snapshot => {
                let revs = self
                    .store
                    .snapshot_batch(replay, replay.cursor_document_id, limit)
                    .await?;
                let last = revs.last().map(|r| r.document_id);
                let out = revs
                    .iter()
                    .map(|r| message::snapshot(replay.id, r, &replay.requested_by, &self.events))
                    .collect();
                Ok((out, (None, last)))
            }
        }
    }

    /// Waits while a live event waits, renewing the lease meanwhile. False: the replay is
    /// no longer ours, or this instance is stopping.
    async fn yield_to_live(
        &self,
        replay: &ReplayRecord,
        shutdown: &CancellationToken,
    ) -> Result<bool, StoreError> {
        let mut renewed = Instant::now();
        while self
            .store
            .live_events_waiting(self.settings.live_window)
            .await?
        {
            if shutdown.is_cancelled() {
                return Ok(false);
            }
            tokio::time::sleep(YIELD_PAUSE).await;
            if renewed.elapsed() > self.settings.lease / 3 {
                let lease = self.settings.lease;
                if !self
                    .store
                    .renew_replay(replay.id, &self.name, None, lease)
                    .await?
                {
                    return Ok(false);
                }
                renewed = Instant::now();
            }
        }
        Ok(true)
    }

    /// Sleeps `wait` (or until shutdown), renewing the lease if the wait is long.
    async fn pause(
        &self,
        replay: &ReplayRecord,
        wait: Duration,
        shutdown: &CancellationToken,
    ) -> Result<(), StoreError> {
        let lease = self.settings.lease;
        let mut left = wait;
        while !left.is_zero() && !shutdown.is_cancelled() {
            let nap = left.min(lease / 3);
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(nap) => {}
            }
            left -= nap;
            if !left.is_zero() {
                self.store
                    .renew_replay(replay.id, &self.name, None, lease)
                    .await?;
            }
        }
        Ok(())
    }
}

/// Keeps a replay at most `per_sec` events a second: after each batch, how long to wait
/// before the next.
struct Pace {
    per_sec: f64,
    next: Instant,
}

impl Pace {
    fn new(per_sec: u32) -> Self {
        Self {
            per_sec: f64::from(per_sec.max(1)),
            next: Instant::now(),
        }
    }

    /// `n` events went out: the wait until the next batch may go.
    fn after(&mut self, n: usize) -> Duration {
        let now = Instant::now();
        self.next = self.next.max(now) + Duration::from_secs_f64(n as f64 / self.per_sec);
        self.next.saturating_duration_since(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_spreads_batches_over_the_second() {
        let mut p = Pace::new(200);
        let first = p.after(20);
        assert!(first <= Duration::from_millis(100), "{first:?}");
        assert!(first >= Duration::from_millis(90), "{first:?}");
        let second = p.after(20);
        assert!(
            second > first,
            "the second batch waits for the first one's share too"
        );
    }
}
