//! The benchmark's environment: its own database, queue and service processes.

mod approve;
mod console;
mod cost;
mod data;
mod direct;
mod drain;
mod drive;
mod goals;
mod growth;
mod listen;
#[allow(dead_code)] // the tests' helpers beside the proxy
#[path = "../../tests/api/support/proxy.rs"]
mod proxy;
mod publish;
mod report;
mod rows;
mod service;
mod sustained;

pub use approve::{approve_each, approve_load};
pub use console::console_rows;
pub use cost::CostSample;
pub use drain::outbox_drain;
pub use drive::{drive, drive_for, interleaved, rounds, Measure, Rec, ROUNDS};
pub use goals::{ApproveFigures, Goals};
pub use growth::{data_size_row, drain_row};
pub use proxy::Proxy;
pub use report::{Figures, Report};
pub use rows::{cost_row, starvation_row};
pub use service::Service;
pub use sustained::sustained_row;

use std::time::{Duration, Instant};

use kh_review::http::auth::{sign, Role};
use lapin::options::{
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions, QueuePurgeOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use secrecy::SecretString;
use sqlx::{Connection as _, PgConnection, PgPool};
use uuid::Uuid;

pub(crate) const DB: &str = "kh_bench";
pub(crate) const EXCHANGE: &str = "kh.bench.events";
const QUEUE: &str = "kh-bench.events";
pub(crate) const DEV_SECRET: &str = "development-only-secret-change-me";

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("database url has a path");
    format!("{base}/{db}")
}

/// Drops and creates the benchmark's database next to `base`'s; returns its URL.
async fn fresh_database(base: &str) -> anyhow::Result<String> {
    let mut admin = PgConnection::connect(base)
        .await
        .map_err(|e| anyhow::anyhow!("PostgreSQL unreachable ({e}); run `make services`"))?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    sqlx::query(&format!("CREATE DATABASE {DB}"))
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    Ok(with_db(base, DB))
}

/// The benchmark's exchange and a durable queue bound to every routing key.
async fn declare_queue(amqp_url: &str) -> anyhow::Result<(Connection, Channel)> {
    let conn = connect_amqp(amqp_url).await?;
    let amqp = conn.create_channel().await?;
    let durable_exchange = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    let durable_queue = QueueDeclareOptions {
        durable: true,
        ..Default::default()
    };
    amqp.exchange_declare(
        EXCHANGE,
        ExchangeKind::Topic,
        durable_exchange,
        FieldTable::default(),
    )
    .await?;
    amqp.queue_declare(QUEUE, durable_queue, FieldTable::default())
        .await?;
    amqp.queue_bind(
        QUEUE,
        EXCHANGE,
        "document.#",
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    Ok((conn, amqp))
}

pub(crate) async fn connect_amqp(url: &str) -> lapin::Result<Connection> {
    Connection::connect(
        url,
        ConnectionProperties::default()
            .with_executor(tokio_executor_trait::Tokio::current())
            .with_reactor(tokio_reactor_trait::Tokio),
    )
    .await
}

pub struct BenchEnv {
    pub pg_url: String,
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
        let base = env_or(
            "APP__DATABASE__URL",
            "postgres://kh:kh@127.0.0.1:5432/kh_review",
        );
        let pg_url = fresh_database(&base).await?;
        let pg = sqlx::postgres::PgPoolOptions::new()
            .max_connections(80)
            // No health check round trip on checkout: the floor's connections never go stale.
            .test_before_acquire(false)
            .connect(&pg_url)
            .await?;
        kh_review::store::migrate(&pg).await?;
        let mongo_url = env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017");
        mongodb::Client::with_uri_str(&mongo_url)
            .await?
            .database(DB)
            .drop()
            .await?;
        let amqp_urls = env_or("APP__AMQP__URLS", "amqp://guest:guest@127.0.0.1:5672/%2f");
        let amqp_url = amqp_urls.split(',').next().unwrap_or_default().to_string();
        let (conn, amqp) = declare_queue(&amqp_url).await?;
        // Whatever an earlier run left on the queue is not this run's.
        amqp.queue_purge(QUEUE, QueuePurgeOptions::default())
            .await?;
        let redis_url = env_or("APP__REDIS__URL", "redis://127.0.0.1:6379");
        Ok(Self {
            pg_url,
            redis_url,
            amqp_url,
            mongo_url,
            pg,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(128)
                .build()?,
            reviewer_token: sign(
                &SecretString::from(DEV_SECRET),
                "bench-reviewer",
                &[Role::Reviewer],
                3600,
            ),
            amqp,
            amqp_conn: conn,
            admin: PgPool::connect(&base).await?,
        })
    }

    /// Deletes the benchmark's keys from Redis (its lock prefix, `bench:`): a preload leaves
    /// 100,000 fence keys, and a Redis that holds them all makes every `KEYS` slow.
    pub async fn clear_redis(&self) -> anyhow::Result<usize> {
        let mut redis = self.redis()?.get_multiplexed_async_connection().await?;
        let mut cursor = 0u64;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("bench:*")
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
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("redis://127.0.0.1:{}", l.local_addr().unwrap().port())
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
                QUEUE,
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
            .queue_purge(QUEUE, QueuePurgeOptions::default())
            .await?;
        Ok(())
    }

    /// Waits until exactly `n` messages are on the queue, then empties it.
    pub async fn expect_queue(&self, n: usize) -> anyhow::Result<()> {
        self.await_queue(n, Instant::now()).await?;
        self.purge_queue().await
    }

    /// Waits until exactly `n` messages are on the queue (more is a failure: duplicates);
    /// returns the seconds from `since` to the first message and to the `n`th.
    pub async fn await_queue(&self, n: usize, since: Instant) -> anyhow::Result<(f64, f64)> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut first = None;
        loop {
            let len = self.queue_len().await? as usize;
            if len > 0 {
                first.get_or_insert(since.elapsed().as_secs_f64());
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
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.backlog().await? > 0 {
            anyhow::ensure!(Instant::now() < deadline, "outbox not drained");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.expect_queue(n).await
    }
}
