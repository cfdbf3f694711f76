//! Delivers the outbox: for each row, first the MongoDB projection, then (for events) the
//! confirmed RabbitMQ publish. A request tries its own document's rows right after COMMIT;
//! whatever fails is retried by the background loop with exponential backoff.
//!
//! Never publish an event before MongoDB holds its version, and never mark a row done
//! before its publish is confirmed. Delivery is at least once.

pub mod publisher;
mod settings;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

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

enum RowOutcome {
    Done,
    Failed,
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

    /// The request path: deliver this document's due rows now, unless a dependency failed
    /// moments ago. Errors are logged, never returned: the background loop retries.
    pub async fn dispatch_document_now(&self, document_id: Uuid) {
        let paused = self
            .inline_paused_until
            .lock()
            .expect("poisoned")
            .is_some_and(|t| Instant::now() < t);
        if paused {
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
        if proj_failed || pub_failed {
            let pause = self.settings.backoff_base * 4;
            *self.inline_paused_until.lock().expect("poisoned") = Some(Instant::now() + pause);
            if only_document.is_some() {
                // Stop the inline loop: the rows now wait for their retry time.
                return Ok(0);
            }
        }
        Ok(projected + published)
    }

    /// How long a claimed row stays ours: beyond the longest delivery attempt.
    fn claim_for(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// Projects the current state of every document that has unprojected rows. Needs no
    /// ordering: the projection is the document's latest version, under a version guard.
    /// Stops at the first MongoDB failure (the rest are given back for later).
    async fn project_pass(&self, only_document: Option<Uuid>) -> Result<(usize, bool), StoreError> {
        let rows = self
            .store
            .claim_unprojected(only_document, self.settings.batch_size, self.claim_for())
            .await?;
        let mut by_doc: Vec<(Uuid, Vec<&OutboxRow>)> = Vec::new();
        for row in &rows {
            match by_doc.iter_mut().find(|(d, _)| *d == row.document_id) {
                Some((_, v)) => v.push(row),
                None => by_doc.push((row.document_id, vec![row])),
            }
        }
        let mut done = 0;
        let token = rows.first().map(|r| r.claim_token).unwrap_or_default();
        for (i, (document_id, doc_rows)) in by_doc.iter().enumerate() {
            let ids: Vec<i64> = doc_rows.iter().map(|r| r.id).collect();
            if !self.store.renew(&ids, token, self.claim_for()).await? {
                continue; // the claim ran out while earlier documents were projected
            }
            let doc =
                self.store.document(*document_id).await?.ok_or_else(|| {
                    anyhow::anyhow!("outbox row of a document that does not exist")
                })?;
            match self.mongo.project(&doc).await {
                Ok(outcome) => {
                    self.stats.projected.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%document_id, ?outcome, version = doc.version, "projected to mongodb");
                    self.store.mark_projected(&ids, token).await?;
                    done += ids.len();
                }
                Err(e) => {
                    self.stats
                        .projection_failures
                        .fetch_add(1, Ordering::Relaxed);
                    for row in doc_rows {
                        self.fail(row, &format!("projection: {e:#}")).await?;
                    }
                    let rest: Vec<i64> = by_doc[i + 1..]
                        .iter()
                        .flat_map(|(_, rs)| rs.iter().map(|r| r.id))
                        .collect();
                    self.store.unclaim(&rest, token).await?;
                    return Ok((done, true));
                }
            }
        }
        Ok((done, false))
    }

    /// Publishes the oldest projected, undone row of each document, marking each done as
    /// soon as the broker confirms it. Stops at the first RabbitMQ failure.
    async fn publish_pass(&self, only_document: Option<Uuid>) -> Result<(usize, bool), StoreError> {
        let limit = if only_document.is_some() {
            1
        } else {
            self.settings.batch_size
        };
        let rows = self
            .store
            .claim_publishable(only_document, limit, self.claim_for())
            .await?;
        for (i, row) in rows.iter().enumerate() {
            if !self
                .store
                .renew(&[row.id], row.claim_token, self.claim_for())
                .await?
            {
                continue; // the claim ran out while earlier rows were published
            }
            if let RowOutcome::Failed = self.deliver(row).await? {
                let rest: Vec<i64> = rows[i + 1..].iter().map(|r| r.id).collect();
                self.store.unclaim(&rest, row.claim_token).await?;
                return Ok((i + 1, true));
            }
        }
        Ok((rows.len(), false))
    }

    #[tracing::instrument(skip_all, fields(document_id = %row.document_id, event_id = %row.event_id, event_type = %row.event_type))]
    async fn deliver(&self, row: &OutboxRow) -> Result<RowOutcome, StoreError> {
        if let Some(rk) = &row.routing_key {
            let body = serde_json::to_vec(&row.payload).map_err(anyhow::Error::from)?;
            if let Err(e) = self
                .publisher
                .publish(rk, &row.event_id.to_string(), &row.event_type, &body)
                .await
            {
                self.stats.publish_failures.fetch_add(1, Ordering::Relaxed);
                return self.fail(row, &format!("publish: {e:#}")).await;
            }
            self.stats.published.fetch_add(1, Ordering::Relaxed);
            tracing::info!(version = row.document_version, "event published");
        }
        self.store
            .mark_done(row.id, row.routing_key.is_some())
            .await?;
        Ok(RowOutcome::Done)
    }

    async fn fail(&self, row: &OutboxRow, error: &str) -> Result<RowOutcome, StoreError> {
        let retry_in = self.backoff(row.attempts);
        tracing::warn!(
            attempts = row.attempts + 1,
            ?retry_in,
            error,
            "outbox delivery failed"
        );
        self.store
            .mark_failed(row.id, row.claim_token, retry_in, error)
            .await?;
        Ok(RowOutcome::Failed)
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

    /// The background loop: poll, deliver, repeat until `shutdown`; finishes its batch first.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let idle = self.settings.poll_interval;
        tracing::info!("outbox dispatcher started");
        while !shutdown.is_cancelled() {
            let wait = match self.dispatch_batch(None).await {
                Ok(n) if n > 0 => Duration::ZERO,
                Ok(_) => idle,
                Err(e) => {
                    tracing::warn!(error = %e, "outbox poll failed");
                    idle
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
        tracing::info!("outbox dispatcher stopped");
    }
}
