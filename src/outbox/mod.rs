//! Delivers the outbox: for each row, first the MongoDB projection, then (for events) the
//! confirmed RabbitMQ publish.
//!
//! The request that commits a change owns its row from the INSERT and delivers it right
//! after COMMIT, then marks it with one statement: nothing to take on the happy path. Whatever it
//! does not deliver (a dependency failed, the instance died, an earlier row of the document
//! was still waiting) the background loop takes and retries with exponential backoff, in
//! batches: projections run side by side, publishes are pipelined on one channel.
//!
//! Never publish an event before MongoDB holds its version, and never mark a row done
//! before its publish is confirmed. Delivery is at least once.

pub mod asyncapi;
pub mod checkpoint;
pub mod envelope;
mod fault;
pub mod marks;
pub(crate) mod nodes;
mod passes;
pub mod publisher;
pub mod replay;
mod required;
pub mod schemas;
mod settings;
pub mod trace_headers;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::Document;
use crate::store::mongo::MongoProjection;
use crate::store::{OutboxRow, PgStore, StoreError};
pub use envelope::EventSettings;
use fault::{Fault, Phase};
pub use marks::Marks;
use publisher::{AmqpPublisher, Destination, PublishError};
use required::RequiredQueues;
pub use settings::{AmqpSettings, OutboxSettings, QueueType};
use trace_headers::Producer;

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
    /// What the CloudEvents headers of every message say of the service.
    events: EventSettings,
    /// After a failure, requests leave delivery to the background loop for a while, so they
    /// do not each pay a down dependency's timeout.
    inline_paused_until: Mutex<Option<Instant>>,
    stats: DispatchStats,
    /// `amqp.required_queues`: each gets its own copy of every event.
    required: RequiredQueues,
    /// The done marks of rows delivered by their requests, written in groups.
    marks: Marks,
}

/// What a pass did: rows delivered or tried, and whether a dependency was down.
#[derive(Debug, Clone, Copy, Default)]
struct Pass {
    done: usize,
    down: bool,
}

/// The longest a pass waits between tries while its dependency is down: a returning
/// dependency is noticed within this.
const OUTAGE_PROBE_MAX: Duration = Duration::from_secs(2);

impl Dispatcher {
    pub fn new(
        store: PgStore,
        mongo: MongoProjection,
        publisher: Arc<AmqpPublisher>,
        settings: OutboxSettings,
        events: EventSettings,
    ) -> Self {
        let marks = Marks::new(store.clone(), settings.mark_window);
        Self {
            marks,
            store,
            mongo,
            publisher,
            settings,
            events,
            inline_paused_until: Mutex::new(None),
            stats: DispatchStats::default(),
            required: RequiredQueues::new(Vec::new()),
        }
    }

    /// Delivers every event to each of `queues` as well (`amqp.required_queues`).
    pub fn with_required_queues(mut self, queues: Vec<String>) -> Self {
        self.required = RequiredQueues::new(queues);
        self
    }

    /// The required queues, and those missing now (at most a second old); an error when
    /// the broker could not be asked.
    pub async fn required_queues(&self) -> (Vec<String>, anyhow::Result<Vec<String>>) {
        let names = self.required_queue_names();
        (names, self.required.missing(&self.publisher).await)
    }

    pub fn required_queue_names(&self) -> Vec<String> {
        self.required.names().to_vec()
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
            None => {
                // An earlier row of the document may be undone only because its mark
                // waits here: written first, the inline pass can deliver this one.
                self.marks.flush_if_pending(document.id).await;
                self.dispatch_document_now(document.id).await
            }
        }
    }

    /// Writes the done marks still waiting for their group (at shutdown).
    pub async fn flush_marks(&self) {
        self.marks.flush().await;
    }

    /// Projects `document`, publishes the row's event, and hands the row to the grouped
    /// done marks. On a failure the row is given back or marked for a retry (or, if even
    /// that fails, left to the dispatchers once its lease ends).
    async fn deliver_owned(&self, document: &Document, row: OutboxRow) {
        let projected = match row.projected {
            false => self.project(document).await,
            true => Ok(()),
        };
        let delivered = match projected {
            Ok(()) => self.publish(&row).await,
            Err(fault) => Err(fault),
        };
        let marked = match delivered {
            Ok(()) => {
                self.marks.mark(row.id, row.document_id).await;
                Ok(())
            }
            Err(fault) => self.fail(&[&row], &fault).await,
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
            match self.dispatch_document_batch(document_id).await {
                Ok(0) => return,
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(%document_id, error = %e, "inline dispatch failed; the dispatcher will retry");
                    return;
                }
            }
        }
    }

    /// One round for one document: project what is unprojected, then publish its oldest
    /// due event. Returns how many rows were delivered or tried; 0 also when a dependency
    /// is down, which ends the inline loop.
    async fn dispatch_document_batch(&self, document_id: Uuid) -> Result<usize, StoreError> {
        let projected = self.project_pass(Some(document_id)).await?;
        if projected.down {
            return Ok(0);
        }
        let published = self.publish_pass(document_id).await?;
        if published.down {
            return Ok(0);
        }
        Ok(projected.done + published.done)
    }

    /// How long a taken row stays ours: beyond the longest delivery attempt.
    fn take_for(&self) -> Duration {
        Duration::from_secs(30)
    }

    /// Writes the document's projection to MongoDB.
    async fn project(&self, document: &Document) -> Result<(), Fault> {
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
    async fn publish(&self, row: &OutboxRow) -> Result<(), Fault> {
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
    async fn fail(&self, rows: &[&OutboxRow], fault: &Fault) -> Result<(), StoreError> {
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

    /// The background loops, each until `shutdown` (finishing its batch first), each a
    /// task of its own (started and supervised by the wiring): one projects, one publishes,
    /// so MongoDB catches up while RabbitMQ is down or slow, and the other way round. While
    /// a loop's dependency is down it retries with a growing pause (see `outage_backoff`),
    /// whatever the backlog: never a tight loop.
    pub async fn run_projection(self: Arc<Self>, shutdown: CancellationToken) {
        self.pass_loop(Phase::Projection, shutdown).await
    }

    /// The publish loop; see [`Dispatcher::run_projection`].
    pub async fn run_publish(self: Arc<Self>, shutdown: CancellationToken) {
        self.pass_loop(Phase::Publish, shutdown).await
    }

    async fn pass_loop(self: Arc<Self>, phase: Phase, shutdown: CancellationToken) {
        let mut outage = 0u32;
        let mut ahead = None;
        while !shutdown.is_cancelled() {
            let pass = match phase {
                Phase::Projection => self.project_pass(None).await,
                Phase::Publish => self.publish_pass_ahead(&mut ahead).await,
            };
            let wait = match pass {
                Ok(p) if p.down => {
                    outage += 1;
                    self.outage_backoff(outage)
                }
                Ok(p) => {
                    outage = 0;
                    if p.done > 0 {
                        Duration::ZERO
                    } else {
                        self.settings.poll_interval
                    }
                }
                Err(e) => {
                    tracing::warn!(?phase, error = %e, "outbox poll failed");
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
        self.give_back(ahead).await;
    }

    /// The wait after the `n`th pass in a row that found its dependency down: doubling
    /// from `backoff_base`, at most `backoff_max` and [`OUTAGE_PROBE_MAX`].
    fn outage_backoff(&self, n: u32) -> Duration {
        let exp = 2u32.saturating_pow(n.saturating_sub(1).min(20));
        self.settings
            .backoff_base
            .saturating_mul(exp)
            .min(self.settings.backoff_max)
            .min(OUTAGE_PROBE_MAX)
    }
}
