//! The audit checkpoints' writer: every `audit.checkpoint_secs` each instance tries the
//! checkpoint lock; the one that gets it, unless the latest checkpoint is younger than half
//! the interval (another instance wrote this round), reads every chain's head, signs a
//! checkpoint linked to the latest one, inserts it into the checkpoint store and publishes
//! its `audit.checkpoint` event. A chain that does not extend its entry in the latest
//! checkpoint (rewound, rewritten, gone) keeps that entry, with an error in the log, so
//! that `audit verify` goes on finding it; a latest checkpoint that does not hold is
//! never written on. The others skip the round. An event the broker did not
//! confirm is sent again first thing next round; a round whose store write failed is
//! simply the next round's to do.
//!
//! Never updates or deletes a checkpoint; never writes one not linked to the latest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::domain::audit::checkpoint::{follow, to_look_up, ChainHead, Checkpoint};
use crate::domain::audit::GENESIS;
use crate::outbox::checkpoint::CheckpointEvent;
use crate::outbox::envelope::EventSettings;
use crate::outbox::publisher::{AmqpPublisher, PublishError};
use crate::store::mongo::{CheckpointStore, Inserted};
use crate::store::{PgStore, CHECKPOINT_LOCK};

/// Events not confirmed kept for the next round, at most (the oldest are dropped: the
/// checkpoints themselves are in the store, and their links name the ones before).
const MAX_UNSENT: usize = 16;

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointRound {
    /// Another instance holds the lock, or wrote a checkpoint this round.
    Skipped,
    /// Checkpoint `sequence` written, over `chains` chains of `rows` rows, in `took`.
    Wrote {
        sequence: i64,
        chains: usize,
        rows: i64,
        took: Duration,
        published: bool,
    },
}

pub struct CheckpointWriter {
    store: PgStore,
    checkpoints: CheckpointStore,
    publisher: Arc<AmqpPublisher>,
    events: EventSettings,
    every: Duration,
    unsent: tokio::sync::Mutex<Vec<CheckpointEvent>>,
}

impl CheckpointWriter {
    pub fn new(
        store: PgStore,
        checkpoints: CheckpointStore,
        publisher: Arc<AmqpPublisher>,
        events: EventSettings,
        every: Duration,
    ) -> Self {
        Self {
            store,
            checkpoints,
            publisher,
            events,
            every,
            unsent: Default::default(),
        }
    }

    /// One round: the events left unsent, then the lock and a checkpoint if none was
    /// written this round, then the lock released with its session.
    pub async fn run_once(&self) -> anyhow::Result<CheckpointRound> {
        self.send_unsent().await;
        let Some(session) = self.store.locked_session(CHECKPOINT_LOCK).await? else {
            return Ok(CheckpointRound::Skipped);
        };
        let round = self.write().await;
        session.close().await;
        round
    }

    async fn write(&self) -> anyhow::Result<CheckpointRound> {
        let started = Instant::now();
        let latest = self.checkpoints.latest().await?;
        let now = chrono::Utc::now();
        let fresh = |taken_at: chrono::DateTime<chrono::Utc>| {
            (now - taken_at).to_std().unwrap_or_default() < self.every / 2
        };
        if latest.as_ref().is_some_and(|h| fresh(h.taken_at)) {
            return Ok(CheckpointRound::Skipped);
        }
        let mut chains = self.store.chain_heads().await?;
        let key = self.store.audit_key();
        let (sequence, prev) = match &latest {
            None => (1, GENESIS),
            Some(h) => {
                let before = self.checkpoints.load(h).await?;
                chains = self.following(&before, chains).await?;
                (h.sequence + 1, h.link)
            }
        };
        let cp = Checkpoint::seal(key, sequence, now, prev, chains);
        if self.checkpoints.insert(&cp).await? == Inserted::Taken {
            return Ok(CheckpointRound::Skipped);
        }
        let event = CheckpointEvent::of(&cp, self.checkpoints.name());
        let published = self.send(event).await;
        Ok(CheckpointRound::Wrote {
            sequence,
            chains: cp.chains.len(),
            rows: cp.rows(),
            took: started.elapsed(),
            published,
        })
    }

    /// The chains of the checkpoint after `before` (which must hold): as they are now
    /// where they extend it, else as it holds them.
    async fn following(
        &self,
        before: &Checkpoint,
        now: Vec<ChainHead>,
    ) -> anyhow::Result<Vec<ChainHead>> {
        // Its link to the one before is verify's to report; its contents must hold.
        if !before.signed(self.store.audit_key()) {
            anyhow::bail!(
                "checkpoint {} is not what was signed: no checkpoint is written on it",
                before.sequence
            );
        }
        let linked = self.store.links_at(&to_look_up(before, &now)).await?;
        let (chains, kept) = follow(before, now, &linked);
        for k in &kept {
            tracing::error!(chain = %k.chain.name(), found = k.found.as_str(), sequence = before.sequence, "an audit chain does not extend the latest checkpoint: its entry there is kept");
        }
        Ok(chains)
    }

    /// Publishes `event`; keeps it for the next round if the broker did not confirm it.
    async fn send(&self, event: CheckpointEvent) -> bool {
        match event.publish(&self.publisher, &self.events).await {
            Ok(()) => true,
            Err(PublishError::Refused(why)) => {
                tracing::warn!(sequence = event.sequence, %why, "audit.checkpoint event refused: not sent again");
                false
            }
            Err(PublishError::Unavailable(e)) => {
                tracing::warn!(sequence = event.sequence, error = %format!("{e:#}"), "audit.checkpoint event not confirmed: sent again next round");
                let mut unsent = self.unsent.lock().await;
                unsent.push(event);
                let over = unsent.len().saturating_sub(MAX_UNSENT);
                unsent.drain(..over);
                false
            }
        }
    }

    async fn send_unsent(&self) {
        let waiting = std::mem::take(&mut *self.unsent.lock().await);
        for event in waiting {
            self.send(event).await;
        }
    }

    /// The writer: a round every `audit.checkpoint_secs`, until `shutdown`.
    pub async fn run(&self, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.every) => {}
            }
            match self.run_once().await {
                Ok(CheckpointRound::Wrote {
                    sequence,
                    chains,
                    rows,
                    took,
                    published,
                }) => {
                    let ms = took.as_millis() as u64;
                    tracing::info!(
                        sequence,
                        chains,
                        rows,
                        ms,
                        published,
                        "audit checkpoint written"
                    );
                }
                Ok(CheckpointRound::Skipped) => {}
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "audit checkpoint round failed; the next one tries again")
                }
            }
        }
    }
}
