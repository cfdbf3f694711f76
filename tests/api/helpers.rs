//! `spawn_app()` and the `TestApp` every integration test drives (its requests here, its
//! views of the stores in `inspect.rs`).
//!
//! Each app gets its own PostgreSQL database (copied from a migrated template), Redis key
//! prefix, MongoDB database and AMQP exchange + queue, so tests run in parallel. The
//! services must be running (`make services`); a missing one fails the test loudly.

use std::time::Duration;

use kh_review::auth::{sign, Role};
use kh_review::config::Settings;
use kh_review::startup::Application;
use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use reqwest::{Response, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};
use sqlx::{Connection as _, PgConnection, PgPool};
use tokio::sync::OnceCell;

pub use crate::inspect::*;
use uuid::Uuid;

const HOW_TO_START: &str = "start the services with `make services` (scripts/services.sh up), \
                            or point APP__DATABASE__URL / APP__REDIS__URL / APP__AMQP__URL / \
                            APP__MONGO__URL at running servers";

pub fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

pub fn pg_url() -> String {
    env_or(
        "APP__DATABASE__URL",
        "postgres://kh:kh@127.0.0.1:5432/kh_review",
    )
}
pub fn redis_url() -> String {
    env_or("APP__REDIS__URL", "redis://127.0.0.1:6379")
}
pub fn amqp_url() -> String {
    env_or("APP__AMQP__URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
}
pub fn mongo_url() -> String {
    env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017")
}

fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("database url has a path");
    format!("{base}/{db}")
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// A migrated template database, made once per test process.
async fn template() -> &'static str {
    TEMPLATE
        .get_or_init(|| async {
            let name = "kh_review_test_template".to_string();
            let mut admin = PgConnection::connect(&pg_url())
                .await
                .unwrap_or_else(|e| panic!("PostgreSQL unreachable ({e}): {HOW_TO_START}"));
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .unwrap();
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut admin)
                .await
                .unwrap();
            // Leftovers of earlier runs that died before their teardown.
            let stale: Vec<String> = sqlx::query_scalar(
                "SELECT datname FROM pg_database WHERE datname LIKE 'kh_t_%' \
                 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = pg_database.datname)",
            )
            .fetch_all(&mut admin)
            .await
            .unwrap();
            for db in stale {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db}"))
                    .execute(&mut admin)
                    .await;
            }
            admin.close().await.unwrap();
            let pool = PgPool::connect(&with_db(&pg_url(), &name)).await.unwrap();
            kh_review::startup::migrate(&pool).await.unwrap();
            pool.close().await;
            name
        })
        .await
}

/// PostgreSQL refuses to copy a template that another CREATE DATABASE is copying at the
/// same moment, so the copies of this process take turns.
static TEMPLATE_COPY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn create_test_database() -> String {
    let tpl = template().await;
    let name = format!("kh_t_{}", Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&pg_url()).await.unwrap();
    {
        let _turn = TEMPLATE_COPY.lock().await;
        sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {tpl}"))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("could not create test database: {e}"));
    }
    admin.close().await.unwrap();
    name
}

/// How to build one test app.
pub struct AppOptions {
    pub redis_url: Option<String>,
    pub amqp_url: Option<String>,
    pub mongo_url: Option<String>,
    pub database_url: Option<String>,
    pub lock_ttl_ms: u64,
    pub redis_timeout_ms: u64,
    pub breaker_open_ms: u64,
    pub run_dispatcher: bool,
    pub db_pool: u32,
    pub amqp_timeout_ms: u64,
    /// Reuse the stores of another app (several instances of one deployment).
    pub share_with: Option<Shared>,
}

impl Default for AppOptions {
    fn default() -> Self {
        Self {
            redis_url: None,
            amqp_url: None,
            mongo_url: None,
            database_url: None,
            lock_ttl_ms: 10_000,
            redis_timeout_ms: 300,
            breaker_open_ms: 2000,
            run_dispatcher: true,
            db_pool: 30,
            amqp_timeout_ms: 1500,
            share_with: None,
        }
    }
}

/// The per-test names of every store, shareable between instances.
#[derive(Clone)]
pub struct Shared {
    pub db_name: String,
    pub prefix: String,
    pub mongo_db: String,
    pub exchange: String,
    pub queue: String,
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub settings: Settings,
    pub shared: Shared,
    pub pg: PgPool,
    pub redis: redis::Client,
    pub amqp: Channel,
    _amqp_conn: Connection,
    pub mongo: mongodb::Database,
    pub server: actix_web::dev::ServerHandle,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    owns_stores: bool,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(AppOptions::default()).await
}

pub async fn spawn_app_with(opts: AppOptions) -> TestApp {
    let (shared, owns) = match opts.share_with.clone() {
        Some(s) => (s, false),
        None => {
            let id = Uuid::new_v4().simple().to_string();
            (
                Shared {
                    db_name: create_test_database().await,
                    prefix: format!("t:{id}:"),
                    mongo_db: format!("kh_t_{}", &id[..16]),
                    exchange: format!("kh.test.{id}"),
                    queue: format!("kh.test.{id}.all"),
                },
                true,
            )
        }
    };
    let config_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut settings = Settings::load_from(&config_dir).expect("config/default.toml loads");
    settings.server.port = 0;
    settings.server.test_hooks = true;
    settings.database.url = SecretString::from(
        opts.database_url
            .clone()
            .unwrap_or_else(|| with_db(&pg_url(), &shared.db_name)),
    );
    settings.database.max_connections = opts.db_pool;
    settings.database.migrate_on_start = opts.database_url.is_none();
    settings.redis.url = SecretString::from(opts.redis_url.clone().unwrap_or_else(redis_url));
    settings.redis.key_prefix = shared.prefix.clone();
    settings.redis.op_timeout_ms = opts.redis_timeout_ms.min(opts.lock_ttl_ms / 4);
    settings.lock.ttl_ms = opts.lock_ttl_ms;
    settings.lock.breaker_open_ms = opts.breaker_open_ms;
    settings.lock.max_hold_ms = opts.lock_ttl_ms.max(30_000);
    settings.mongo.url = SecretString::from(opts.mongo_url.clone().unwrap_or_else(mongo_url));
    settings.mongo.database = shared.mongo_db.clone();
    settings.amqp.url = SecretString::from(opts.amqp_url.clone().unwrap_or_else(amqp_url));
    settings.amqp.exchange = shared.exchange.clone();
    settings.amqp.bind_queue = String::new();
    settings.amqp.timeout_ms = opts.amqp_timeout_ms;
    settings.outbox.poll_interval_ms = 100;
    settings.outbox.backoff_base_ms = 100;
    settings.outbox.backoff_max_ms = 1000;
    settings.outbox.run_dispatcher = opts.run_dispatcher;
    settings.log.level = env_or("KH_TEST_LOG", "off");
    settings.validate().expect("test settings are valid");
    kh_review::telemetry::init(&settings.log);

    // The test's own view of every store (the real ones, not through any proxy).
    let pg = PgPool::connect(&with_db(&pg_url(), &shared.db_name))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL unreachable ({e}): {HOW_TO_START}"));
    let redis = redis::Client::open(redis_url()).unwrap();
    let mut rc = redis
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("Redis unreachable ({e}): {HOW_TO_START}"));
    let _: String = redis::cmd("PING").query_async(&mut rc).await.unwrap();
    let mongo = mongodb::Client::with_uri_str(mongo_url())
        .await
        .unwrap()
        .database(&shared.mongo_db);
    mongo
        .run_command(mongodb::bson::doc! {"ping": 1})
        .await
        .unwrap_or_else(|e| panic!("MongoDB-compatible server unreachable ({e}): {HOW_TO_START}"));
    let conn = Connection::connect(
        &amqp_url(),
        ConnectionProperties::default()
            .with_executor(tokio_executor_trait::Tokio::current())
            .with_reactor(tokio_reactor_trait::Tokio),
    )
    .await
    .unwrap_or_else(|e| panic!("RabbitMQ unreachable ({e}): {HOW_TO_START}"));
    let amqp = conn.create_channel().await.unwrap();
    amqp.exchange_declare(
        &shared.exchange,
        ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    amqp.queue_declare(
        &shared.queue,
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();
    amqp.queue_bind(
        &shared.queue,
        &shared.exchange,
        "document.#",
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .unwrap();

    let app = Application::build(settings.clone())
        .await
        .expect("application builds");
    let port = app.port();
    let server = app.handle();
    let task = tokio::spawn(app.run_until_stopped());
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        settings,
        shared,
        pg,
        redis,
        amqp,
        _amqp_conn: conn,
        mongo,
        server,
        task,
        owns_stores: owns,
    }
}

pub const AUTHOR: &str = "alice";
pub const REVIEWER: &str = "bob";
pub const REVIEWER2: &str = "carol";

impl TestApp {
    pub fn token(&self, sub: &str, roles: &[Role]) -> String {
        sign(&self.settings.auth.jwt_secret, sub, roles, 600)
    }
    pub fn author(&self) -> String {
        self.token(AUTHOR, &[Role::Author])
    }
    pub fn reviewer(&self) -> String {
        self.token(REVIEWER, &[Role::Reviewer])
    }
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn create_document(&self, title: &str, body: &str) -> Value {
        let r = self
            .post(
                "/api/v1/documents",
                &self.author(),
                json!({"title": title, "body": body}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        r.json().await.unwrap()
    }

    /// Creates and submits a document; returns (document_id, review_id).
    pub async fn pending_review(&self) -> (String, String) {
        let doc = self
            .create_document("Quarterly report", "Numbers and words.")
            .await;
        let id = doc["id"].as_str().unwrap().to_string();
        let r = self
            .post(
                &format!("/api/v1/documents/{id}/submit"),
                &self.author(),
                json!({}),
            )
            .await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        let v: Value = r.json().await.unwrap();
        (id, v["review"]["id"].as_str().unwrap().to_string())
    }

    pub async fn approve(&self, review_id: &str, token: &str) -> Response {
        self.post(
            &format!("/api/v1/reviews/{review_id}/approve"),
            token,
            json!({"comment": "ok"}),
        )
        .await
    }

    pub async fn reject(&self, review_id: &str, token: &str) -> Response {
        self.post(
            &format!("/api/v1/reviews/{review_id}/reject"),
            token,
            json!({"reason": "needs work"}),
        )
        .await
    }

    /// Stops the server, checks nothing was left behind, and drops this test's stores.
    pub async fn finish(self) {
        if self.owns_stores {
            self.outbox_drained(Duration::from_secs(20)).await;
            let left = self.lock_keys_left().await;
            assert!(left.is_empty(), "lock keys left behind: {left:?}");
        }
        self.stop().await;
    }

    /// Stops the server without the leftover checks (and drops the stores if owned).
    pub async fn stop(self) {
        self.server.stop(true).await;
        let _ = self.task.await;
        if !self.owns_stores {
            return;
        }
        self.pg.close().await;
        let mut admin = PgConnection::connect(&pg_url()).await.unwrap();
        let _ = sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.shared.db_name
        ))
        .execute(&mut admin)
        .await;
        let _ = self.mongo.drop().await;
        let _ = self
            .amqp
            .queue_delete(&self.shared.queue, QueueDeleteOptions::default())
            .await;
        let _ = self
            .amqp
            .exchange_delete(&self.shared.exchange, ExchangeDeleteOptions::default())
            .await;
        let mut c = self.redis.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.shared.prefix))
            .query_async(&mut c)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query_async(&mut c).await;
        }
    }
}

pub fn expose(s: &SecretString) -> &str {
    s.expose_secret()
}
