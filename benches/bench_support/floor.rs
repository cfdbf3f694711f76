//! The floor: what the service sends its stores for one approval, issued by the benchmark
//! itself with no service in between (no HTTP, no Redis lock, no idempotency record): the
//! transaction's statements, committed, then the service's MongoDB projection
//! (`MongoProjection::project`, the guarded update), its confirmed publish
//! (`AmqpPublisher::publish`) and the row marked done, in the order
//! `Dispatcher::deliver_owned` runs them after COMMIT.
//!
//! Two floors: [`Statements::Old`], the statements of before the combined write, kept as
//! the reference: one statement per row written (`stepwise`, the file
//! `tests/api/support/stepwise.rs`, written outside the service against its schema; the
//! test `routes::writes` holds the service's combined write to the rows it leaves), and
//! each row marked by its own statement (`PgStore::mark_done`). And [`Statements::New`],
//! the service's own: `PgStore::write_vote` (the combined write), and the marks grouped by
//! `outbox::Marks`.

use std::sync::Arc;
use std::time::Duration;

use kh_review::config::Settings;
use kh_review::domain::audit::AuditKey;
use kh_review::domain::{Access, Decision, Document, Guard, TokenRoles, UserId};
use kh_review::outbox::envelope::{cloudevent_headers, EventSettings};
use kh_review::outbox::publisher::{AmqpPublisher, Destination};
use kh_review::outbox::trace_headers;
use kh_review::outbox::Marks;
use kh_review::store::mongo::MongoProjection;
use kh_review::store::{
    Committed, DatabaseSettings, OutboxRow, PgStore, TraceContext, WriteContext, WriteError,
};
use secrecy::ExposeSecret;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use super::cost::cpu_seconds;
use super::stepwise;
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
    /// The floor at `conc`: `n` pending reviews approved through `floor`, every event
    /// checked on the queue. Also returns the CPU seconds this process spent driving them
    /// (the store clients' own work, with no service in between).
    pub async fn floor(
        &self,
        floor: &Arc<Floor>,
        conc: usize,
        n: usize,
    ) -> anyhow::Result<(Figures, f64)> {
        self.floor_with(floor, conc, n, || ()).await
    }

    /// [`BenchEnv::floor`], `started` called once the clients are warm, right before the
    /// first approval.
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
}

/// The floor's PostgreSQL client, and how it marks a row done.
enum Pg {
    /// The stepwise statements on a pool of their own, the audit rows linked with the
    /// service's key; each row marked by its own statement, through `store`, a store over
    /// the same pool.
    Old {
        pool: PgPool,
        key: AuditKey,
        store: PgStore,
        /// The service's bound on a write transaction (`DatabaseSettings::tx_timeout`).
        bound: Duration,
    },
    /// The service's store and its grouped marks.
    New { store: PgStore, marks: Marks },
}

/// The floor's clients of the stores, built from the service's settings as the service
/// builds them, driven without the service. Made once by the rows that use them and kept
/// for their rounds, as a service keeps its own.
pub struct Floor {
    pg: Pg,
    mongo: MongoProjection,
    publisher: AmqpPublisher,
    events: EventSettings,
    actor: UserId,
}

impl Floor {
    pub async fn new(settings: &Settings, statements: Statements) -> anyhow::Result<Arc<Self>> {
        let mut database = settings.database.clone();
        database.max_connections = POOL;
        let pg = match statements {
            Statements::Old => {
                let pool = stepwise_pool(&database)?;
                Pg::Old {
                    store: PgStore::new(pool.clone(), database.tx_timeout()),
                    bound: database.tx_timeout(),
                    pool,
                    key: AuditKey::new(settings.audit.key.expose_secret().as_bytes()),
                }
            }
            Statements::New => {
                let store = PgStore::from_settings(&database)?.with_audit(&settings.audit);
                let marks = Marks::new(store.clone(), settings.outbox.mark_window);
                Pg::New { store, marks }
            }
        };
        Ok(Arc::new(Self {
            pg,
            mongo: MongoProjection::from_settings(&settings.mongo).await?,
            publisher: AmqpPublisher::from_settings(&settings.amqp),
            events: settings.events.clone(),
            actor: UserId::parse("floor").map_err(|e| anyhow::anyhow!("{e}"))?,
        }))
    }

    fn store(&self) -> &PgStore {
        match &self.pg {
            Pg::Old { store, .. } | Pg::New { store, .. } => store,
        }
    }

    /// Opens `conc` PostgreSQL connections, the broker's and MongoDB's before the
    /// measurement, so that it measures approvals, not connecting.
    pub async fn warm(&self, conc: usize) -> anyhow::Result<()> {
        let pings = (0..conc).map(|_| self.store().ping());
        futures_util::future::try_join_all(pings).await?;
        self.publisher.ping().await?;
        self.mongo.ping().await
    }

    /// One approval: the transaction the service commits (row locks, the review and the
    /// document, the audit row and the outbox row, owned by this approval), then the
    /// projection, the confirmed publish and the row marked done.
    pub async fn approve(&self, review_id: Uuid) -> anyhow::Result<()> {
        let (document, owned) = self.write(review_id).await?;
        let row = owned.ok_or_else(|| {
            anyhow::anyhow!("the floor's outbox row was left to the dispatchers (an earlier row of its document was undelivered)")
        })?;
        self.mongo.project(&document).await?;
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
        match &self.pg {
            Pg::Old { store, .. } => store.mark_done(&[row.id]).await?,
            Pg::New { marks, .. } => marks.mark(row.id, row.document_id).await,
        }
        Ok(())
    }

    /// The approval's transaction, committed: the document as written, and the outbox row
    /// the approval owns.
    async fn write(&self, review_id: Uuid) -> anyhow::Result<(Document, Option<OutboxRow>)> {
        let request_id = Uuid::now_v7().to_string();
        let reviewer = Access::new(
            TokenRoles {
                reviewer: true,
                ..Default::default()
            },
            [],
        );
        let ctx = WriteContext {
            actor: &self.actor,
            access: &reviewer,
            request_id: &request_id,
            guard: Guard::RowLockOnly,
            own_outbox_for: Some(OWN_OUTBOX_FOR),
            conditions: Default::default(),
        };
        let decision = Decision::Approve(None);
        match &self.pg {
            Pg::Old {
                pool, key, bound, ..
            } => {
                let vote = stepwise::vote(pool, key, review_id, decision, &ctx);
                tokio::time::timeout(*bound, vote).await?
            }
            Pg::New { store, .. } => {
                let transaction = async {
                    let uncommitted = store.write_vote(review_id, decision, Vec::new(), &ctx);
                    Ok::<_, WriteError>(uncommitted.await?.commit().await?)
                };
                let Committed { value, owned } = store.bounded(transaction).await?;
                Ok((value.document, owned))
            }
        }
    }

    /// Writes the grouped marks still waiting.
    pub async fn flush(&self) {
        if let Pg::New { marks, .. } = &self.pg {
            marks.flush().await;
        }
    }
}

/// The stepwise floor's pool: the service's (`PgStore::from_settings`), its sessions with
/// the same time bounds, set when they connect, costing no statement; no health check on
/// checkout (a connection used within the last second gets none in the service either).
fn stepwise_pool(database: &DatabaseSettings) -> anyhow::Result<PgPool> {
    let opts: PgConnectOptions = database.url.expose_secret().parse()?;
    let ms = |d: Duration| d.as_millis().to_string();
    let opts = opts.options([
        (
            "lock_timeout",
            ms(database.lock_timeout.max(Duration::from_millis(1))),
        ),
        ("statement_timeout", ms(database.statement_timeout)),
        (
            "idle_in_transaction_session_timeout",
            ms(database.tx_timeout()),
        ),
    ]);
    Ok(PgPoolOptions::new()
        .max_connections(database.max_connections)
        .acquire_timeout(database.acquire_timeout)
        .test_before_acquire(false)
        .connect_lazy_with(opts))
}
