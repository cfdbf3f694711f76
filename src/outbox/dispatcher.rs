//! The `Dispatcher`: a committing request's own delivery right after COMMIT (its done mark
//! grouped with others: `marks.rs`), and the background projection and publish loops over
//! the passes (`passes.rs`); how a row is delivered is `delivery.rs`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::Document;
use crate::store::mongo::MongoProjection;
use crate::store::{OutboxRow, PgStore, StoreError};

use super::delivery::{Delivery, DispatchStats};
use super::envelope::EventSettings;
use super::fault::Phase;
use super::marks::Marks;
use super::passes::{project_pass, publish_pass, publish_pass_ahead, Pipeline};
use super::publisher::AmqpPublisher;
use super::required::RequiredQueues;
use super::settings::OutboxSettings;

/// Delivers the outbox: a committing request's own row right after COMMIT, and the
/// background loops over the rest.
pub struct Dispatcher {
    delivery: Arc<Delivery>,
    /// The done marks of rows delivered by their requests, written in groups.
    marks: Marks,
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
        let delivery = Delivery::new(store, mongo, publisher, settings, events);
        Self {
            delivery: Arc::new(delivery),
            marks,
        }
    }

    /// Delivers every event to each of `queues` as well (`amqp.required_queues`).
    pub fn with_required_queues(mut self, queues: Vec<String>) -> Self {
        let delivery =
            Arc::get_mut(&mut self.delivery).expect("set before the dispatcher is shared");
        delivery.required = RequiredQueues::new(queues);
        self
    }

    /// The required queues, and those missing now (at most a second old); an error when
    /// the broker could not be asked.
    pub async fn required_queues(&self) -> (Vec<String>, anyhow::Result<Vec<String>>) {
        let names = self.required_queue_names();
        (
            names,
            self.delivery
                .required
                .missing(&self.delivery.publisher)
                .await,
        )
    }

    pub fn required_queue_names(&self) -> Vec<String> {
        self.delivery.required.names().to_vec()
    }

    pub fn stats(&self) -> &DispatchStats {
        &self.delivery.stats
    }

    pub fn publisher(&self) -> &Arc<AmqpPublisher> {
        &self.delivery.publisher
    }

    /// How long a committing request should own the outbox row it writes: the inline lease,
    /// or None while inline delivery is paused (then the dispatchers take the row at once).
    pub fn own_outbox_for(&self) -> Option<Duration> {
        (!self.delivery.inline_paused()).then_some(self.delivery.settings.inline_lease)
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
            false => self.delivery.project(document).await,
            true => Ok(()),
        };
        let delivered = match projected {
            Ok(()) => self.delivery.publish(&row).await,
            Err(fault) => Err(fault),
        };
        let marked = match delivered {
            Ok(()) => {
                self.marks.mark(row.id, row.document_id).await;
                Ok(())
            }
            Err(fault) => self.delivery.fail(&[&row], &fault).await,
        };
        if let Err(e) = marked {
            tracing::warn!(document_id = %row.document_id, error = %e, "could not mark an outbox row; a dispatcher retries it after its lease");
        }
    }

    /// This document's due rows, now, unless a dependency failed moments ago.
    pub async fn dispatch_document_now(&self, document_id: Uuid) {
        if self.delivery.inline_paused() {
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
        let projected = project_pass(&self.delivery, Some(document_id)).await?;
        if projected.down {
            return Ok(0);
        }
        let published = publish_pass(&self.delivery, document_id).await?;
        if published.down {
            return Ok(0);
        }
        Ok(projected.done + published.done)
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
        let mut pipeline = Pipeline::default();
        while !shutdown.is_cancelled() {
            let pass = match phase {
                Phase::Projection => project_pass(&self.delivery, None).await,
                Phase::Publish => publish_pass_ahead(&self.delivery, &mut pipeline).await,
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
                        self.delivery.settings.poll_interval
                    }
                }
                Err(e) => {
                    tracing::warn!(?phase, error = %e, "outbox poll failed");
                    self.delivery.settings.poll_interval
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
        pipeline.close(&self.delivery).await;
    }

    /// The wait after the `n`th pass in a row that found its dependency down: doubling
    /// from `backoff_base`, at most `backoff_max` and [`OUTAGE_PROBE_MAX`].
    fn outage_backoff(&self, n: u32) -> Duration {
        let exp = 2u32.saturating_pow(n.saturating_sub(1).min(20));
        self.delivery
            .settings
            .backoff_base
            .saturating_mul(exp)
            .min(self.delivery.settings.backoff_max)
            .min(OUTAGE_PROBE_MAX)
    }
}
