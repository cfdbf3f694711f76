//! The benchmark's environment: its own database, queue and service processes.

#[allow(dead_code)] // the tests' helpers beside the proxy
#[path = "../../tests/api/proxy.rs"]
mod proxy;
mod report;

pub use proxy::Proxy;
pub use report::{Figures, Report};

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kh_review::auth::{sign, Role};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions, QueuePurgeOptions,
};
use lapin::publisher_confirm::Confirmation;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use secrecy::SecretString;
use serde_json::json;
use sqlx::{Connection as _, PgConnection, PgPool};
use uuid::Uuid;

const DB: &str = "kh_bench";
const EXCHANGE: &str = "kh.bench.events";
const QUEUE: &str = "kh-bench.events";
const DEV_SECRET: &str = "development-only-secret-change-me";

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("database url has a path");
    format!("{base}/{db}")
}

pub struct BenchEnv {
    pub pg_url: String,
    pub redis_url: String,
    pub amqp_url: String,
    pub mongo_url: String,
    pub pg: PgPool,
    pub http: reqwest::Client,
    pub reviewer_token: String,
    amqp: Channel,
    _amqp_conn: Connection,
}

impl BenchEnv {
    /// A fresh database (migrated by the first service), queue and MongoDB database.
    pub async fn prepare() -> anyhow::Result<Self> {
        let base = env_or(
            "APP__DATABASE__URL",
            "postgres://kh:kh@127.0.0.1:5432/kh_review",
        );
        let mut admin = PgConnection::connect(&base)
            .await
            .map_err(|e| anyhow::anyhow!("PostgreSQL unreachable ({e}); run `make services`"))?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
        sqlx::query(&format!("CREATE DATABASE {DB}"))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        let pg_url = with_db(&base, DB);
        let pg = sqlx::postgres::PgPoolOptions::new()
            .max_connections(80)
            .connect(&pg_url)
            .await?;
        kh_review::startup::migrate(&pg).await?;
        let mongo_url = env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017");
        mongodb::Client::with_uri_str(&mongo_url)
            .await?
            .database(DB)
            .drop()
            .await?;
        let amqp_url = env_or("APP__AMQP__URL", "amqp://guest:guest@127.0.0.1:5672/%2f");
        let conn = Connection::connect(
            &amqp_url,
            ConnectionProperties::default()
                .with_executor(tokio_executor_trait::Tokio::current())
                .with_reactor(tokio_reactor_trait::Tokio),
        )
        .await?;
        let amqp = conn.create_channel().await?;
        amqp.exchange_declare(
            EXCHANGE,
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
        amqp.queue_declare(
            QUEUE,
            QueueDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
        amqp.queue_bind(
            QUEUE,
            EXCHANGE,
            "document.#",
            QueueBindOptions::default(),
            FieldTable::default(),
        )
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
            _amqp_conn: conn,
        })
    }

    pub fn dead_redis_url(&self) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("redis://127.0.0.1:{}", l.local_addr().unwrap().port())
    }

    pub fn amqp_host_port(&self) -> String {
        let after = self.amqp_url.split("://").nth(1).unwrap();
        let after = after.rsplit_once('@').map(|(_, h)| h).unwrap_or(after);
        after.split('/').next().unwrap().to_string()
    }

    pub fn amqp_url_via(&self, port: u16) -> String {
        self.amqp_url
            .replacen(&self.amqp_host_port(), &format!("127.0.0.1:{port}"), 1)
    }

    /// Starts the release binary of the service with the benchmark's stores.
    pub async fn spawn_service(
        &self,
        name: &str,
        extra: &[(&str, String)],
    ) -> anyhow::Result<Service> {
        let exe = std::env::current_exe()?;
        let bin = exe
            .parent()
            .and_then(|p| p.parent())
            .map(|p| p.join("kh-review"));
        let bin = bin.filter(|b| b.exists()).ok_or_else(|| {
            anyhow::anyhow!("the release binary is missing: `cargo build --release --bin kh-review` (make bench does)")
        })?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .env(
                "APP_CONFIG_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
            )
            .env("APP__SERVER__PORT", port.to_string())
            .env("APP__DATABASE__URL", &self.pg_url)
            .env("APP__DATABASE__MAX_CONNECTIONS", "40")
            .env("APP__DATABASE__MIGRATE_ON_START", "false")
            .env("APP__REDIS__URL", &self.redis_url)
            .env("APP__REDIS__KEY_PREFIX", "bench:")
            .env("APP__MONGO__URL", &self.mongo_url)
            .env("APP__MONGO__DATABASE", DB)
            .env("APP__AMQP__URL", &self.amqp_url)
            .env("APP__AMQP__EXCHANGE", EXCHANGE)
            .env("APP__AMQP__BIND_QUEUE", "")
            .env("APP__OUTBOX__BACKOFF_MAX_MS", "1000")
            .env("APP__OUTBOX__POLL_INTERVAL_MS", "100")
            .env("APP__LOG__LEVEL", "error")
            .env("APP__AUTH__JWT_SECRET", DEV_SECRET)
            .env("APP__ENVIRONMENT", "development")
            .stdout(Stdio::null());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn()?;
        let svc = Service {
            name: name.to_string(),
            base: format!("http://127.0.0.1:{port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = self.http.get(format!("{}/readyz", svc.base)).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "service {name} did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(svc)
    }

    /// `n` documents in PENDING_REVIEW with a pending review each, written directly.
    pub async fn make_pending(&self, n: usize) -> anyhow::Result<Vec<Uuid>> {
        let docs: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let reviews: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let mut tx = self.pg.begin().await?;
        sqlx::query(
            "INSERT INTO documents (id, title, body, status, version, author_id) \
             SELECT unnest($1::uuid[]), 'Benchmark document', 'Body of a benchmark document.', 'PENDING_REVIEW', 2, 'bench-author'",
        )
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO reviews (id, document_id, status, document_version, submitted_by) \
             SELECT r, d, 'PENDING', 2, 'bench-author' FROM unnest($1::uuid[], $2::uuid[]) AS t(r, d)",
        )
        .bind(&reviews)
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE documents d SET current_review_id = t.r FROM unnest($1::uuid[], $2::uuid[]) AS t(r, id) WHERE d.id = t.id",
        )
        .bind(&reviews)
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(reviews)
    }

    pub async fn backlog(&self) -> anyhow::Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM outbox WHERE done_at IS NULL")
                .fetch_one(&self.pg)
                .await?,
        )
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
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let len = self.queue_len().await? as usize;
            anyhow::ensure!(
                len <= n,
                "{len} events on the queue, expected {n}: duplicates"
            );
            if len == n {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "only {len} of {n} events delivered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.purge_queue().await
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

    pub async fn direct(&self) -> anyhow::Result<Direct> {
        let conn = Connection::connect(
            &self.amqp_url,
            ConnectionProperties::default()
                .with_executor(tokio_executor_trait::Tokio::current())
                .with_reactor(tokio_reactor_trait::Tokio),
        )
        .await?;
        let ch = conn.create_channel().await?;
        ch.confirm_select(ConfirmSelectOptions::default()).await?;
        let mongo = mongodb::Client::with_uri_str(&self.mongo_url).await?;
        Ok(Direct {
            pg: self.pg.clone(),
            mongo: mongo.database(DB).collection("documents"),
            ch,
            _conn: conn,
        })
    }
}

/// The review path's statements, MongoDB update and confirmed publish, without the service.
pub struct Direct {
    pg: PgPool,
    mongo: mongodb::Collection<mongodb::bson::Document>,
    ch: Channel,
    _conn: Connection,
}

impl Direct {
    pub async fn approve(&self, review_id: Uuid) -> anyhow::Result<()> {
        let mut tx = self.pg.begin().await?;
        sqlx::query("SELECT set_config('lock_timeout', '2000ms', true)")
            .execute(&mut *tx)
            .await?;
        let doc: Uuid = sqlx::query_scalar("SELECT document_id FROM reviews WHERE id = $1")
            .bind(review_id)
            .fetch_one(&mut *tx)
            .await?;
        let (version, status): (i64, String) =
            sqlx::query_as("SELECT version, status FROM documents WHERE id = $1 FOR UPDATE")
                .bind(doc)
                .fetch_one(&mut *tx)
                .await?;
        let rstatus: String =
            sqlx::query_scalar("SELECT status FROM reviews WHERE id = $1 FOR UPDATE")
                .bind(review_id)
                .fetch_one(&mut *tx)
                .await?;
        anyhow::ensure!(
            status == "PENDING_REVIEW" && rstatus == "PENDING",
            "not pending"
        );
        sqlx::query("UPDATE reviews SET status = 'APPROVED', decided_by = 'floor', decided_at = now() WHERE id = $1")
            .bind(review_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE documents SET status = 'APPROVED', version = version + 1, updated_at = now() WHERE id = $1")
            .bind(doc)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, to_status, document_version, lock_mode) \
             VALUES ($1, $2, 'approve', 'floor', 'PENDING_REVIEW', 'APPROVED', $3, 'none')",
        )
        .bind(doc)
        .bind(review_id)
        .bind(version + 1)
        .execute(&mut *tx)
        .await?;
        let event_id = Uuid::now_v7();
        let payload = json!({"event_id": event_id, "event_type": "document.approved", "document_id": doc,
                             "review_id": review_id, "document_version": version + 1, "actor_id": "floor", "data": {}});
        let outbox_id: i64 = sqlx::query_scalar(
            // Claimed at once, as the service's dispatcher would: the service instances running
            // on this database must not deliver the floor's rows.
            "INSERT INTO outbox (event_id, document_id, document_version, event_type, routing_key, payload, claimed_until) \
             VALUES ($1, $2, $3, 'document.approved', 'document.approved', $4, now() + interval '1 hour') RETURNING id",
        )
        .bind(event_id)
        .bind(doc)
        .bind(version + 1)
        .bind(&payload)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        // The same MongoDB write the service makes: insert, or update by `_id` when present.
        let fields = mongodb::bson::doc! {"status": "APPROVED", "version": version + 1, "body": "Body of a benchmark document."};
        let mut full = fields.clone();
        full.insert("_id", doc.to_string());
        if self.mongo.insert_one(full).await.is_err() {
            self.mongo
                .update_one(
                    mongodb::bson::doc! {"_id": doc.to_string()},
                    mongodb::bson::doc! {"$set": fields},
                )
                .await?;
        }
        let confirm = self
            .ch
            .basic_publish(
                EXCHANGE,
                "document.approved",
                BasicPublishOptions {
                    mandatory: true,
                    ..Default::default()
                },
                &serde_json::to_vec(&payload)?,
                BasicProperties::default()
                    .with_delivery_mode(2)
                    .with_message_id(event_id.to_string().into()),
            )
            .await?
            .await?;
        anyhow::ensure!(
            matches!(confirm, Confirmation::Ack(None)),
            "publish not confirmed"
        );
        sqlx::query("UPDATE outbox SET projected_at = now(), published_at = now(), done_at = now() WHERE id = $1")
            .bind(outbox_id)
            .execute(&self.pg)
            .await?;
        Ok(())
    }
}

/// A running service process; killed when dropped.
pub struct Service {
    pub name: String,
    pub base: String,
    child: Child,
}

impl Service {
    /// Peak resident memory of the process so far (VmHWM).
    pub fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no VmHWM in /proc status"))?;
        Ok(kb / 1024.0)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
