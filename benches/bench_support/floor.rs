//! The floor: what the service sends its stores for one approval, issued by the benchmark
//! itself with no service in between (no HTTP, no Redis lock, no idempotency record): the
//! store's own checked statements (`PgStore::stage_vote`, committed, then the row marked
//! done), the service's MongoDB projection (`MongoProjection::project`, the guarded update)
//! and its confirmed publish (`AmqpPublisher::publish`), in the order
//! `Dispatcher::deliver_owned` runs them after COMMIT.
//!
//! Two floors: [`Statements::Old`], the statements of before the combined write (one
//! statement per row written, `Writes::Stepwise`, and each row marked by its own
//! statement), kept as the reference; and [`Statements::New`], the service's own (the
//! combined write, and the marks grouped by `outbox::Marks`).

use std::sync::Arc;
use std::time::Duration;

use kh_review::config::Settings;
use kh_review::domain::{Decision, Guard, UserId};
use kh_review::outbox::envelope::{cloudevent_headers, EventSettings};
use kh_review::outbox::publisher::{AmqpPublisher, Destination};
use kh_review::outbox::trace_headers;
use kh_review::outbox::Marks;
use kh_review::store::mongo::MongoProjection;
use kh_review::store::{Committed, PgStore, TraceContext, WriteContext, WriteError, Writes};
use uuid::Uuid;

use super::cost::cpu_seconds;
use super::{drive, BenchEnv, Figures};

/// How long an approval of the floor owns its outbox row: an hour, so that the service
/// instances running on this database never deliver the floor's rows.
const OWN_OUTBOX_FOR: Duration = Duration::from_secs(3600);

/// The floor's PostgreSQL connections: more than its highest concurrency, so that no
/// approval waits for a connection.
const POOL: u32 = 80;

/// Which statements a floor sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statements {
    /// One statement per row written, each row marked by its own (the reference).
    Old,
    /// The service's: the combined write, the marks grouped.
    New,
}

impl BenchEnv {
    /// The floor of `statements` at `conc`: `n` pending reviews approved through
    /// [`Floor`], every event checked on the queue. Also returns the CPU seconds this
    /// process spent driving them (the store clients' own work, with no service in between).
    pub async fn floor(
        &self,
        statements: Statements,
        conc: usize,
        n: usize,
    ) -> anyhow::Result<(Figures, f64)> {
        let floor = self.floor_clients(statements).await?;
        self.floor_with(&floor, conc, n, || ()).await
    }

    /// [`BenchEnv::floor`] with the floor's clients given; `started` is called once they
    /// are warm, right before the first approval.
    pub async fn floor_with(
        &self,
        floor: &Arc<Floor>,
        conc: usize,
        n: usize,
        started: impl FnOnce(),
    ) -> anyhow::Result<(Figures, f64)> {
        let reviews = Arc::new(self.make_pending(n).await?);
        self.purge_queue().await?;
        let floor = floor.clone();
        floor.warm(conc).await?;
        started();
        let cpu_before = cpu_seconds("self");
        let driven = floor.clone();
        let figures = drive(conc, n, move |i| {
            let (floor, reviews) = (driven.clone(), reviews.clone());
            async move {
                floor.approve(reviews[i]).await?;
                anyhow::Ok(true)
            }
        })
        .await?;
        floor.flush().await;
        let cpu = cpu_seconds("self") - cpu_before;
        self.expect_queue(n).await?;
        Ok((figures, cpu))
    }

    /// The floor's store clients, made on first use and kept for the run (as a service
    /// keeps its own).
    async fn floor_clients(&self, statements: Statements) -> anyhow::Result<Arc<Floor>> {
        let cell = match statements {
            Statements::Old => &self.floor,
            Statements::New => &self.floor_new,
        };
        let made = cell.get_or_try_init(|| Floor::new(&self.settings, statements));
        Ok(made.await?.clone())
    }
}

/// The service's own clients of its stores, built from its settings as the service builds
/// them, driven without the service.
pub struct Floor {
    store: PgStore,
    /// The grouped marks (`Statements::New`); `None`: each row marked by its own statement.
    marks: Option<Marks>,
    mongo: MongoProjection,
    publisher: AmqpPublisher,
    events: EventSettings,
    actor: UserId,
}

impl Floor {
    pub async fn new(settings: &Settings, statements: Statements) -> anyhow::Result<Arc<Self>> {
        let mut database = settings.database.clone();
        database.max_connections = POOL;
        let writes = match statements {
            Statements::Old => Writes::Stepwise,
            Statements::New => Writes::Combined,
        };
        let store = PgStore::from_settings(&database)?.with_writes(writes);
        let marks = (statements == Statements::New)
            .then(|| Marks::new(store.clone(), settings.outbox.mark_window));
        Ok(Arc::new(Self {
            marks,
            store,
            mongo: MongoProjection::from_settings(&settings.mongo).await?,
            publisher: AmqpPublisher::from_settings(&settings.amqp),
            events: settings.events.clone(),
            actor: UserId::parse("floor").map_err(|e| anyhow::anyhow!("{e}"))?,
        }))
    }

    /// Opens `conc` PostgreSQL connections, the broker's and MongoDB's before the
    /// measurement, so that it measures approvals, not connecting.
    pub async fn warm(&self, conc: usize) -> anyhow::Result<()> {
        let pings = (0..conc).map(|_| self.store.ping());
        futures_util::future::try_join_all(pings).await?;
        self.publisher.ping().await?;
        self.mongo.ping().await
    }

    /// One approval: the transaction the service commits (row locks, the review and the
    /// document, the audit row and the outbox row, owned by this approval), then the
    /// projection, the confirmed publish and the row marked done.
    pub async fn approve(&self, review_id: Uuid) -> anyhow::Result<()> {
        let request_id = Uuid::now_v7().to_string();
        let ctx = WriteContext {
            actor: &self.actor,
            admin: false,
            request_id: &request_id,
            guard: Guard::RowLockOnly,
            own_outbox_for: Some(OWN_OUTBOX_FOR),
        };
        let decision = Decision::Approve(None);
        let transaction = async {
            let staged = (self.store)
                .stage_vote(review_id, decision, Vec::new(), &ctx)
                .await?;
            Ok::<_, WriteError>(staged.commit().await?)
        };
        let Committed { value, owned } = self.store.bounded(transaction).await?;
        let row = owned.ok_or_else(|| {
            anyhow::anyhow!("the floor's outbox row was left to the dispatchers (an earlier row of its document was undelivered)")
        })?;
        self.mongo.project(&value.document).await?;
        let routing_key = (row.routing_key.as_deref())
            .ok_or_else(|| anyhow::anyhow!("an approval's outbox row without an event"))?;
        let body = serde_json::to_vec(&row.payload)?;
        // The same headers as the service's publishes, so the floor sends what it sends.
        let mut headers = cloudevent_headers(&row, &self.events);
        let trace = (row.traceparent.as_deref())
            .and_then(|tp| TraceContext::parse(tp, row.tracestate.as_deref()));
        trace_headers::add(&mut headers, trace.as_ref());
        (self.publisher)
            .publish(
                &Destination::topic(routing_key),
                &row.event_id.to_string(),
                &row.event_type,
                headers,
                &body,
            )
            .await?;
        match &self.marks {
            Some(marks) => marks.mark(row.id, row.document_id).await,
            None => self.store.mark_done(&[row.id]).await?,
        }
        Ok(())
    }

    /// Writes the grouped marks still waiting.
    pub async fn flush(&self) {
        if let Some(marks) = &self.marks {
            marks.flush().await;
        }
    }
}
