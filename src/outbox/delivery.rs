//! How the outbox's rows are delivered, whoever delivers them (a committing request or the
//! background passes): a document projected to MongoDB, an event published with its
//! CloudEvents headers and confirmed, a failure noted (a dependency down: the rows go back
//! and requests leave delivery to the passes for a while; a row refused: a retry after its
//! own backoff, or parked after `outbox.max_attempts`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domain::Document;
use crate::store::mongo::{GroupFigures, MongoProjection};
use crate::store::{OutboxRow, PgStore, StoreError};

use super::envelope::{self, EventSettings};
use super::fault::{Fault, Phase};
use super::publisher::{AmqpPublisher, Destination, PublishError};
use super::required::{self, RequiredQueues};
use super::settings::OutboxSettings;
use super::trace_headers::Producer;

#[derive(Debug, Default)]
pub struct DispatchStats {
    pub published: AtomicU64,
    pub projected: AtomicU64,
    pub projection_failures: AtomicU64,
    pub publish_failures: AtomicU64,
    /// Grouped projection commands and the updates they carried (`mongo.group_writes`).
    pub projection_groups: Arc<GroupFigures>,
}

/// The stores, the broker and the settings a delivery uses, and its figures.
pub(super) struct Delivery {
    pub(super) store: PgStore,
    mongo: MongoProjection,
    pub(super) publisher: Arc<AmqpPublisher>,
    pub(super) settings: OutboxSettings,
    /// What the CloudEvents headers of every message say of the service.
    events: EventSettings,
    /// After a failure, requests leave delivery to the background loop for a while, so they
    /// do not each pay a down dependency's timeout.
    inline_paused_until: Mutex<Option<Instant>>,
    pub(super) stats: DispatchStats,
    /// `amqp.required_queues`: each gets its own copy of every event.
    pub(super) required: RequiredQueues,
}

impl Delivery {
    pub(super) fn new(
        store: PgStore,
        mongo: MongoProjection,
        publisher: Arc<AmqpPublisher>,
        settings: OutboxSettings,
        events: EventSettings,
    ) -> Self {
        let stats = DispatchStats {
            projection_groups: mongo.group_figures().unwrap_or_default(),
            ..DispatchStats::default()
        };
        Self {
            store,
            mongo,
            publisher,
            settings,
            events,
            inline_paused_until: Mutex::new(None),
            stats,
            required: RequiredQueues::new(Vec::new()),
        }
    }

    pub(super) fn inline_paused(&self) -> bool {
        self.inline_paused_until
            .lock()
            .expect("poisoned")
            .is_some_and(|t| Instant::now() < t)
    }

    fn pause_inline(&self) {
        let until = Instant::now() + self.settings.backoff_base * 4;
        *self.inline_paused_until.lock().expect("poisoned") = Some(until);
    }

    /// How long a taken row stays ours: beyond the longest delivery attempt.
    pub(super) fn take_for(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// Writes the document's projection to MongoDB.
    pub(super) async fn project(&self, document: &Document) -> Result<(), Fault> {
        match self.mongo.project(document).await {
            Ok(_) => {
                self.stats.projected.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.stats
                    .projection_failures
                    .fetch_add(1, Ordering::Relaxed);
                Err(Fault::Down(Phase::Projection, format!("{e:#}")))
            }
        }
    }

    /// Publishes the row's event (if it has one), with its CloudEvents headers (rebuilt
    /// from the row on every try), and waits for the broker's confirm.
    pub(super) async fn publish(&self, row: &OutboxRow) -> Result<(), Fault> {
        let Some(rk) = &row.routing_key else {
            return Ok(());
        };
        let body = serde_json::to_vec(&row.payload)
            .map_err(|e| Fault::Refused(Phase::Publish, e.to_string()))?;
        let producer = Producer::start(row, self.publisher.exchange(), rk, body.len());
        let mut headers = envelope::cloudevent_headers(row, &self.events);
        for (name, value) in producer.headers().inner() {
            headers.insert(name.clone(), value.clone());
        }
        let to = Destination::topic(rk);
        let (id, kind) = (row.event_id.to_string(), &row.event_type);
        let published = required::publish(
            &self.publisher,
            &self.required,
            &to,
            &id,
            kind,
            headers,
            &body,
        )
        .await;
        producer.end(published.as_ref().err().map(|e| e.to_string()).as_deref());
        match published {
            Ok(()) => {
                self.stats.published.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(document_id = %row.document_id, event_id = %row.event_id, version = row.document_version, "event published");
                Ok(())
            }
            Err(e) => {
                self.stats.publish_failures.fetch_add(1, Ordering::Relaxed);
                Err(match e {
                    PublishError::Refused(why) => Fault::Refused(Phase::Publish, why),
                    down => Fault::Down(Phase::Publish, down.to_string()),
                })
            }
        }
    }

    /// Rows taken with one ticket failed. A dependency down: the rows go back as they were, with the
    /// error noted, and inline delivery pauses. A row refused: a failed attempt, retried
    /// after its own backoff, or parked once it has failed `outbox.max_attempts` times
    /// (only the message's own faults ever park a row).
    pub(super) async fn fail(&self, rows: &[&OutboxRow], fault: &Fault) -> Result<(), StoreError> {
        let Some(token) = rows.first().map(|r| r.ticket) else {
            return Ok(());
        };
        let error = fault.describe();
        let projected = fault.phase() == Phase::Publish;
        if fault.is_down() {
            self.pause_inline();
            tracing::warn!(
                rows = rows.len(),
                error,
                "outbox delivery paused: a dependency is down"
            );
            let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
            return self.store.set_aside(&ids, token, &error, projected).await;
        }
        let max = self.settings.max_attempts;
        for row in rows {
            let retry_in = self.backoff(row.attempts);
            let parked = self
                .store
                .mark_failed(row.id, row.ticket, retry_in, &error, projected, max)
                .await?;
            if parked {
                tracing::error!(outbox_id = row.id, document_id = %row.document_id, event_id = %row.event_id, attempts = row.attempts + 1, error, "outbox row parked: its document's later events wait until an admin retries or skips it");
            } else {
                tracing::warn!(document_id = %row.document_id, event_id = %row.event_id, attempts = row.attempts + 1, ?retry_in, error, "outbox row refused");
            }
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
}
