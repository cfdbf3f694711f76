//! The benchmark's environment: its own database, queue and service processes.

mod approve;
mod audit;
mod caller;
mod console;
mod copy_load;
mod cost;
mod data;
mod drain;
mod drive;
mod editing;
mod figures;
mod floor;
pub use floor::{Floor, Statements};
mod goals;
mod growth;
mod kind;
mod lifecycle;
mod listen;
mod lock;
mod overdue;
mod peer;
mod publish;
mod queue;
mod replay;
mod report;
mod reverify;
mod revise;
mod roundtrips;
mod rows;
mod service;
mod space_lists;
mod statements;
// The floor's stepwise statements: the tests' reference, which `routes::writes` holds the
// service's combined write to (see `floor.rs`).
#[path = "../../tests/api/support/stepwise.rs"]
mod stepwise;
mod sustained;
mod trace;
mod turns;
mod webhooks;
mod workflow;
mod wrk;

pub use approve::{approve_each, approve_load};
pub use audit::audit_rows;
pub use console::console_rows;
pub use cost::CostSample;
pub use drain::outbox_drain;
pub use drive::{
    drive, drive_for, interleaved, interleaved_rounds, round_count, rounds, warm_ups, Measure, Rec,
};
pub use editing::{editing_rows, EditingFigures};
pub use figures::Figures;
pub use goals::{ApproveFigures, Goals};
pub use growth::{data_size_row, drain_row};
pub use kh_review_testkit::proxy::Proxy;
pub use kind::{env_size, names, sized, smoke};
pub use lifecycle::{lifecycle_rows, LifecycleFigures};
pub use lock::lock_rows;
pub use peer::peer_rows;
pub use replay::replay_row;
pub use report::Report;
pub use reverify::reverify_rows;
pub use roundtrips::round_trip_rows;
pub use rows::{cost_row, starvation_row};
pub use service::Service;
pub use space_lists::space_list_rows;
pub use sustained::sustained_row;
pub use trace::trace_rows;
pub use webhooks::webhook_rows;
pub use workflow::{workflow_rows, WorkflowFigures};

use std::time::{Duration, Instant};

use kh_review::config::Settings;
use kh_review::web::auth::{sign, Role};
use kh_review_testkit::amqp::{amqp_connection, declare_exchange_and_queue, Lasting};
use kh_review_testkit::database::{create_database, drop_database};
use kh_review_testkit::proxy::dead_port;
use kh_review_testkit::stores::{
    amqp_url, mongo_database, mongo_url, pg_service_url, pg_url, redis_url, with_db,
};
use lapin::options::{QueueBindOptions, QueueDeclareOptions, QueuePurgeOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};
use secrecy::SecretString;
use sqlx::PgPool;
use uuid::Uuid;

/// The service's own settings (`config/default.toml` and the `APP__*` variables, in
/// development), pointed at the benchmark's stores: the floor's store clients are built
/// from them, and figures that follow the configuration (the outbox's batch size, the lock
/// TTL, the development JWT secret) are read from them rather than copied.
fn bench_settings(pg_url: &str) -> anyhow::Result<Settings> {
    let config_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut s = Settings::load_with(&config_dir, &[("environment", "development")])?;
    s.database.url = SecretString::from(pg_url);
    let names = names();
    s.redis.key_prefix = names.redis_prefix.clone();
    s.mongo.database = names.db.clone();
    s.amqp.exchange = names.exchange.clone();
    // As the services the benchmark starts: no archive queue, only the benchmark's own.
    s.amqp.bind_queue = String::new();
    s.validate()?;
    Ok(s)
}

pub struct BenchEnv {
    /// The service's settings, pointed at the benchmark's stores (see `bench_settings`).
    pub settings: Settings,
    /// The benchmark's database as the tables' owner (migrations, fixtures, the floors).
    pub pg_url: String,
    /// The same database as the service's own role (kh_app): the service connects so, and
    /// row-level security holds for it.
    pub service_pg_url: String,
    /// A pool on another database than the benchmark's (its statistics are read from
    /// there, so that reading them does not count).
    pub admin: PgPool,
    pub redis_url: String,
    pub amqp_url: String,
    pub mongo_url: String,
    pub pg: PgPool,
    pub http: reqwest::Client,
    pub reviewer_token: String,
    amqp: Channel,
    amqp_conn: Connection,
}

impl BenchEnv {
    /// A fresh database (migrated here), queue and MongoDB database.
    pub async fn prepare() -> anyhow::Result<Self> {
        let names = names();
        drop_database(&names.db).await?;
        let url = create_database(&names.db, None).await?;
        let pg = sqlx::postgres::PgPoolOptions::new()
            .max_connections(80)
            // No health check round trip on checkout: these connections never go stale.
            .test_before_acquire(false)
            .connect(&url)
            .await?;
        kh_review::store::migrate(&pg).await?;
        mongo_database(&names.db).await?.drop().await?;
        let conn = amqp_connection().await?;
        let amqp = conn.create_channel().await?;
        let (exchange, queue) = (names.exchange.as_str(), names.queue.as_str());
        declare_exchange_and_queue(&amqp, exchange, queue, Lasting::Durable).await?;
        // The review workflow's events (review.approval_recorded, review.overdue, ..) too.
        amqp.queue_bind(
            queue.into(),
            exchange.into(),
            "review.#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        // Whatever an earlier run left on the queue is not this run's.
        amqp.queue_purge(queue.into(), QueuePurgeOptions::default())
            .await?;
        let settings = bench_settings(&url)?;
        let reviewer_token = sign(
            &settings.auth.jwt_secret,
            "bench-reviewer",
            &[Role::Reviewer],
            3600,
        );
        Ok(Self {
            settings,
            service_pg_url: with_db(&pg_service_url(), &names.db),
            pg_url: url,
            redis_url: redis_url(),
            amqp_url: amqp_url(),
            mongo_url: mongo_url(),
            pg,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(128)
                // Below the service's keep-alive and head timeouts (5 s each): a connection
                // idle while other rows run is dropped here before the server closes it, or
                // the next request may be sent into one the server is closing.
                .pool_idle_timeout(Duration::from_secs(2))
                .build()?,
            reviewer_token,
            amqp,
            amqp_conn: conn,
            admin: PgPool::connect(&pg_url()).await?,
        })
    }

    /// Deletes the benchmark's keys from Redis (its lock prefix, `names().redis_prefix`): a preload leaves
    /// 100,000 fence keys, and a Redis that holds them all makes every `KEYS` slow.
    pub async fn clear_redis(&self) -> anyhow::Result<usize> {
        let mut redis = self.redis()?.get_multiplexed_async_connection().await?;
        let mut cursor = 0u64;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}*", names().redis_prefix))
                .arg("COUNT")
                .arg(10_000)
                .query_async(&mut redis)
                .await?;
            if !keys.is_empty() {
                deleted += keys.len();
                let _: i64 = redis::cmd("UNLINK")
                    .arg(&keys)
                    .query_async(&mut redis)
                    .await?;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }

    pub fn amqp_conn(&self) -> &Connection {
        &self.amqp_conn
    }

    pub fn redis(&self) -> anyhow::Result<redis::Client> {
        Ok(redis::Client::open(self.redis_url.as_str())?)
    }

    pub fn dead_redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}", dead_port())
    }

    pub async fn backlog(&self) -> anyhow::Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM outbox WHERE done_at IS NULL")
                .fetch_one(&self.pg)
                .await?,
        )
    }

    /// Undelivered outbox rows whose document is not projected to MongoDB yet.
    pub async fn unprojected(&self) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM outbox WHERE done_at IS NULL AND projected_at IS NULL",
        )
        .fetch_one(&self.pg)
        .await?)
    }

    pub async fn approved_count(&self, review: Uuid) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM audit_log WHERE review_id = $1 AND action = 'approve'",
        )
        .bind(review)
        .fetch_one(&self.pg)
        .await?)
    }

    pub async fn queue_len(&self) -> anyhow::Result<u32> {
        let q = self
            .amqp
            .queue_declare(
                names().queue.as_str().into(),
                QueueDeclareOptions {
                    passive: true,
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await?;
        Ok(q.message_count())
    }

    pub async fn purge_queue(&self) -> anyhow::Result<()> {
        self.amqp
            .queue_purge(names().queue.as_str().into(), QueuePurgeOptions::default())
            .await?;
        Ok(())
    }

    /// Waits until exactly `n` messages are on the queue, then empties it.
    pub async fn expect_queue(&self, n: usize) -> anyhow::Result<()> {
        self.await_queue(n, Instant::now(), || {}).await?;
        self.purge_queue().await
    }

    /// Waits until exactly `n` messages are on the queue (more is a failure: duplicates);
    /// returns the seconds from `since` to the first message and to the `n`th. `at_first`
    /// runs once, as soon as the first message is seen.
    pub async fn await_queue(
        &self,
        n: usize,
        since: Instant,
        at_first: impl FnOnce(),
    ) -> anyhow::Result<(f64, f64)> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let (mut first, mut at_first) = (None, Some(at_first));
        loop {
            let len = self.queue_len().await? as usize;
            if len > 0 && first.is_none() {
                first = Some(since.elapsed().as_secs_f64());
                if let Some(f) = at_first.take() {
                    f();
                }
            }
            anyhow::ensure!(
                len <= n,
                "{len} events on the queue, expected {n}: duplicates"
            );
            if len == n {
                let all = since.elapsed().as_secs_f64();
                return Ok((first.unwrap_or(all), all));
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "only {len} of {n} events delivered"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Every outbox row delivered and exactly `n` events on the queue.
    pub async fn expect_delivered(&self, n: usize) -> anyhow::Result<()> {
        self.await_drained().await?;
        self.expect_queue(n).await
    }

    /// Waits (up to 120 s) until every outbox row is delivered.
    pub async fn await_drained(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.backlog().await? > 0 {
            anyhow::ensure!(Instant::now() < deadline, "outbox not drained");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }
}
