//! Delivers the outbox: for each row, first the MongoDB projection, then (for events) the
//! confirmed RabbitMQ publish.
//!
//! The request that commits a change owns its row from the INSERT and delivers it right
//! after COMMIT, then marks it with one statement: no claim on the happy path. Whatever it
//! does not deliver (a dependency failed, the instance died, an earlier row of the document
//! was still waiting) the background loop claims and retries with exponential backoff, in
//! batches: projections run side by side, publishes are pipelined on one channel.
//!
//! Never publish an event before MongoDB holds its version, and never mark a row done
//! before its publish is confirmed. Delivery is at least once.

mod passes;
pub mod publisher;
mod settings;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::Document;
use crate::store::mongo::MongoProjection;
use crate::store::{OutboxRow, PgStore, StoreError};
use publisher::AmqpPublisher;
pub use settings::{AmqpSettings, OutboxSettings};

#[derive(Debug, Default)]
pub struct DispatchStats {
    pub published: AtomicU64,
    pub projected: AtomicU64,
    pub projection_failures: AtomicU64,
    pub publish_failures: AtomicU64,
}

pub struct Dispatcher {
    store: PgStore,
    mongo: MongoProjection,
    publisher: Arc<AmqpPublisher>,
    settings: OutboxSettings,
    /// After a failure, requests leave delivery to the background loop for a while, so they
    /// do not each pay a down dependency's timeout.
    inline_paused_until: Mutex<Option<Instant>>,
    stats: DispatchStats,
}

/// Which step of a delivery failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Projection,
    Publish,
}

impl Dispatcher {
    pub fn new(
        store: PgStore,
        mongo: MongoProjection,
        publisher: Arc<AmqpPublisher>,
        settings: OutboxSettings,
    ) -> Self {
        Self {
            store,
            mongo,
            publisher,
            settings,
            inline_paused_until: Mutex::new(None),
            stats: DispatchStats::default(),
        }
    }

    pub fn stats(&self) -> &DispatchStats {
        &self.stats
    }

    pub fn publisher(&self) -> &Arc<AmqpPublisher> {
        &self.publisher
    }

    fn inline_paused(&self) -> bool {
        self.inline_paused_until
            .lock()
            .expect("poisoned")
            .is_some_and(|t| Instant::now() < t)
    }

    fn pause_inline(&self) {
        let until = Instant::now() + self.settings.backoff_base * 4;
        *self.inline_paused_until.lock().expect("poisoned") = Some(until);
    }

    /// How long a committing request should own the outbox row it writes: the inline lease,
    /// or None while inline delivery is paused (then the dispatchers take the row at once).
    pub fn own_outbox_for(&self) -> Option<Duration> {
        (!self.inline_paused()).then_some(self.settings.inline_lease)
    }

    /// The request path, right after COMMIT: deliver the row the request owns (`document` is
    /// its state as committed), or, when it owns none, this document's due rows. Errors are
    /// logged, never returned: the background loop retries.
    pub async fn after_commit(&self, document: &Document, owned: Option<OutboxRow>) {
        match owned {
            Some(row) => self.deliver_owned(document, row).await,
            None => self.dispatch_document_now(document.id).await,
        }
    }

    /// Projects `document`, publishes the row's event, and marks the row done in one
    /// statement. On a failure the row is marked for a retry (or, if even that fails, left
    /// to the dispatchers once its lease ends).
    async fn deliver_owned(&self, document: &Document, row: OutboxRow) {
        let delivered = match self.mongo.project(document).await {
            Err(e) => Err((Step::Projection, e)),
            Ok(_) => {
                self.stats.projected.fetch_add(1, Ordering::Relaxed);
                self.publish(&row).await.map_err(|e| (Step::Publish, e))
            }
        };
        let marked = match delivered {
            Ok(()) => self.store.mark_done(&[row.id]).await,
            Err((step, e)) => self.fail(&[&row], step, &e).await,
        };
        if let Err(e) = marked {
            tracing::warn!(document_id = %row.document_id, error = %e, "could not mark an outbox row; a dispatcher retries it after its lease");
        }
    }

    /// This document's due rows, now, unless a dependency failed moments ago.
    pub async fn dispatch_document_now(&self, document_id: Uuid) {
        if self.inline_paused() {
            return;
        }
        loop {
            match self.dispatch_batch(Some(document_id)).await {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(%document_id, error = %e, "inline dispatch failed; the dispatcher will retry");
                    return;
                }
            }
        }
    }

    /// One round: project what is unprojected, then publish what is due, in order.
    /// Returns how many rows were delivered or tried.
    pub async fn dispatch_batch(&self, only_document: Option<Uuid>) -> Result<usize, StoreError> {
        let (projected, proj_failed) = self.project_pass(only_document).await?;
        let (published, pub_failed) = if proj_failed {
            (0, false)
        } else {
            self.publish_pass(only_document).await?
        };
        if (proj_failed || pub_failed) && only_document.is_some() {
            // Stop the inline loop: the rows now wait for their retry time.
            return Ok(0);
        }
        Ok(projected + published)
    }

    /// How long a claimed row stays ours: beyond the longest delivery attempt.
    fn claim_for(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// Publishes the row's event (if it has one) and waits for the broker's confirm.
    async fn publish(&self, row: &OutboxRow) -> anyhow::Result<()> {
        let Some(rk) = &row.routing_key else {
            return Ok(());
        };
        let body = serde_json::to_vec(&row.payload)?;
        let published = self
            .publisher
            .publish(rk, &row.event_id.to_string(), &row.event_type, &body)
            .await;
        match &published {
            Ok(()) => {
                self.stats.published.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(document_id = %row.document_id, event_id = %row.event_id, version = row.document_version, "event published");
            }
            Err(_) => {
                self.stats.publish_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        published
    }

    /// Records a failed attempt on each row (retry with backoff) and pauses inline delivery.
    async fn fail(
        &self,
        rows: &[&OutboxRow],
        step: Step,
        error: &anyhow::Error,
    ) -> Result<(), StoreError> {
        self.pause_inline();
        if step == Step::Projection {
            self.stats
                .projection_failures
                .fetch_add(rows.len() as u64, Ordering::Relaxed);
        }
        let error = match step {
            Step::Projection => format!("projection: {error:#}"),
            Step::Publish => format!("publish: {error:#}"),
        };
        for row in rows {
            let retry_in = self.backoff(row.attempts);
            tracing::warn!(document_id = %row.document_id, event_id = %row.event_id, attempts = row.attempts + 1, ?retry_in, error, "outbox delivery failed");
            let projected = step == Step::Publish;
            self.store
                .mark_failed(row.id, row.claim_token, retry_in, &error, projected)
                .await?;
        }
        Ok(())
    }

    fn backoff(&self, attempts: i32) -> Duration {
        let exp = 2u32.saturating_pow(attempts.clamp(0, 20) as u32);
        let ms = (self.settings.backoff_base.saturating_mul(exp))
            .min(self.settings.backoff_max)
            .as_millis() as u64;
        // Up to 20% jitter so instances do not retry in lockstep.
        let jitter = rand::random::<u64>() % (ms / 5 + 1);
        Duration::from_millis(ms + jitter)
    }

    /// The background loops, until `shutdown` (each finishes its batch first): one projects,
    /// one publishes, so MongoDB catches up while RabbitMQ is down or slow, and the other
    /// way round. A pass that failed waits `backoff_base` before the next, so a dependency
    /// that fails fast is not retried in a tight loop.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        tracing::info!("outbox dispatcher started");
        let projector = tokio::spawn(self.clone().pass_loop(Step::Projection, shutdown.clone()));
        self.clone().pass_loop(Step::Publish, shutdown).await;
        let _ = projector.await;
        tracing::info!("outbox dispatcher stopped");
    }

    async fn pass_loop(self: Arc<Self>, step: Step, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            let pass = match step {
                Step::Projection => self.project_pass(None).await,
                Step::Publish => self.publish_pass(None).await,
            };
            let wait = match pass {
                Ok((_, true)) => self.settings.backoff_base,
                Ok((n, false)) if n > 0 => Duration::ZERO,
                Ok(_) => self.settings.poll_interval,
                Err(e) => {
                    tracing::warn!(?step, error = %e, "outbox poll failed");
                    self.settings.poll_interval
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}
