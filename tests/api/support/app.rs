//! `spawn_app()` and the `TestApp` every integration test drives (its requests here, what
//! it reads back from the stores in `inspect.rs`).
//!
//! Each app gets its own PostgreSQL database (copied from a migrated template), Redis key
//! prefix, MongoDB database and AMQP exchange + queue, so tests run in parallel. The
//! services must be running (`make services`); a missing one fails the test loudly.
//! Teardown (`teardown.rs`) runs when the app is dropped, whether the test passed or not.

use std::time::Duration;

use kh_review::config::Settings;
use kh_review::lock::Ttl;
use kh_review::startup::Application;
use kh_review::web::auth::{sign, Role};
use lapin::{Channel, Connection};
use reqwest::{Response, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};
use sqlx::PgPool;

use super::stores::{Shared, StoreClients};
use super::views::Document;
use kh_review_testkit::stores::{
    amqp_url, env_or, mongo_url, pg_service_url, pg_url, redis_url, with_db,
};

/// A last change to a test app's settings.
pub type Configure = Box<dyn Fn(&mut Settings) + Send + Sync>;

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
    /// How long a committing request owns its outbox row (`outbox.inline_lease_ms`).
    pub inline_lease_ms: u64,
    /// Rows per dispatcher pass (`outbox.batch_size`); None keeps the configured one.
    pub outbox_batch: Option<i64>,
    /// `server.probe_cache_ms`: 0 in tests unless asked (a test reads `/readyz` and
    /// `/metrics` as they are now); the default of config/default.toml is 1000.
    pub probe_cache_ms: u64,
    /// Reuse the stores of another app (several instances of one deployment).
    pub share_with: Option<Shared>,
    /// Last changes to the settings (a Redis topology, a list of brokers).
    pub configure: Option<Configure>,
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
            inline_lease_ms: 3000,
            outbox_batch: None,
            probe_cache_ms: 0,
            share_with: None,
            configure: None,
        }
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub settings: Settings,
    pub shared: Shared,
    pub pg: PgPool,
    pub redis: redis::Client,
    pub amqp: Channel,
    /// Keeps `amqp` open.
    _amqp_conn: Connection,
    pub mongo: mongodb::Database,
    pub server: actix_web::dev::ServerHandle,
    /// The app's background tasks (their test hook, whether they have ended).
    pub tasks: std::sync::Arc<kh_review::tasks::Supervisor>,
    pub(super) task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    pub(super) owns_stores: bool,
    /// Leftover checks on teardown (off for apps a test stops on purpose mid-way).
    pub(super) checks: bool,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(AppOptions::default()).await
}

pub async fn spawn_app_with(opts: AppOptions) -> TestApp {
    let (shared, owns) = match opts.share_with.clone() {
        Some(s) => (s, false),
        None => (Shared::create().await, true),
    };
    let settings = settings_for(&opts, &shared);
    kh_review::telemetry::init(&settings.log);
    let (clients, amqp_conn) = StoreClients::connect(&shared).await;
    let app = Application::build(settings.clone())
        .await
        .expect("application builds");
    let port = app.port();
    let server = app.handle();
    let tasks = app.tasks();
    let task = tokio::spawn(app.run_until_stopped());
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            // Below the service's keep-alive and head timeouts (5 s each): the client's pool
            // keeps a connection it raced open but never used, and the server answers such a
            // connection's silence with a 408 after 5 s, which a request sent into it just
            // then reads as its own answer.
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
        settings,
        shared,
        pg: clients.pg,
        redis: clients.redis,
        amqp: clients.amqp,
        _amqp_conn: amqp_conn,
        mongo: clients.mongo,
        server,
        tasks,
        task: Some(task),
        owns_stores: owns,
        checks: true,
    }
}

/// `config/default.toml`, pointed at the test's stores, with short timings.
fn settings_for(opts: &AppOptions, shared: &Shared) -> Settings {
    let url = |given: &Option<String>, default: fn() -> String| {
        SecretString::from(given.clone().unwrap_or_else(default))
    };
    let config_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    // The built-in default is production; tests run as development, with test hooks.
    let dev = [("environment", "development")];
    let mut s = Settings::load_with(&config_dir, &dev).expect("config/default.toml loads");
    s.server.port = 0;
    s.server.test_hooks = true;
    s.server.probe_cache = ms(opts.probe_cache_ms);
    // As production runs: the service's role (row-level security holds), the owner to
    // migrate. A test that names its own URL (through a proxy) runs as the owner.
    let db_url = opts.database_url.clone();
    s.database.migrate_url = db_url
        .is_none()
        .then(|| SecretString::from(with_db(&pg_url(), &shared.db_name)));
    s.database.url =
        SecretString::from(db_url.unwrap_or_else(|| with_db(&pg_service_url(), &shared.db_name)));
    s.database.max_connections = opts.db_pool;
    s.database.migrate_on_start = opts.database_url.is_none();
    s.redis.url = url(&opts.redis_url, redis_url);
    s.redis.key_prefix = shared.prefix.clone();
    s.redis.op_timeout = ms(opts.redis_timeout_ms.min(opts.lock_ttl_ms / 4));
    s.lock.ttl = Ttl::new(ms(opts.lock_ttl_ms)).expect("lock_ttl_ms is not zero");
    s.lock.breaker_open = ms(opts.breaker_open_ms);
    s.lock.max_hold = ms(opts.lock_ttl_ms.max(30_000));
    s.mongo.url = url(&opts.mongo_url, mongo_url);
    s.mongo.database = shared.mongo_db.clone();
    s.amqp.urls = vec![url(&opts.amqp_url, amqp_url)];
    s.amqp.exchange = shared.exchange.clone();
    s.amqp.bind_queue = String::new();
    s.amqp.timeout = ms(opts.amqp_timeout_ms);
    s.outbox.poll_interval = ms(100);
    s.outbox.backoff_base = ms(100);
    s.outbox.backoff_max = ms(1000);
    s.outbox.run_dispatcher = opts.run_dispatcher;
    s.outbox.inline_lease = ms(opts.inline_lease_ms);
    if let Some(n) = opts.outbox_batch {
        s.outbox.batch_size = n;
    }
    s.log.level = env_or("KH_TEST_LOG", "off");
    if let Some(configure) = &opts.configure {
        configure(&mut s);
    }
    s.validate().expect("test settings are valid");
    s
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub const AUTHOR: &str = "alice";
/// The title and body of the documents `pending_review` and `approved_review` make.
const TITLE: &str = "Quarterly report";
const BODY: &str = "Numbers and words.";
pub const REVIEWER: &str = "bob";
pub const REVIEWER2: &str = "carol";

impl TestApp {
    /// The URL of the tables' owner on the app's database (its migrate URL), which row-level
    /// security does not wall in: for sessions of a test that stand in for another writer.
    pub fn owner_url(&self) -> &str {
        let db = &self.settings.database;
        expose(db.migrate_url.as_ref().unwrap_or(&db.url))
    }

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

    /// The JSON of a path that needs no token (`/readyz`, `/openapi.json`).
    pub async fn public_json(&self, path: &str) -> serde_json::Value {
        let r = self.client.get(self.url(path)).send().await;
        r.expect("request sent").json().await.expect("a JSON body")
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn create_document(&self, title: &str, body: &str) -> Document {
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
        self.pending_document(TITLE, BODY).await
    }

    /// Creates a document of `title` and `body` and submits it: (document_id, review_id).
    pub async fn pending_document(&self, title: &str, body: &str) -> (String, String) {
        let id = self.create_document(title, body).await.id.to_string();
        let review_id = self.submitted(&id).await;
        (id, review_id)
    }

    /// An approved document of `pending_review`'s title and body (version 3, published):
    /// (document_id, review_id).
    pub async fn approved_review(&self) -> (String, String) {
        self.approved_document(TITLE, BODY).await
    }

    /// A document of `title` and `body`, submitted and approved by the reviewer (200):
    /// version 3, published. Returns (document_id, review_id).
    pub async fn approved_document(&self, title: &str, body: &str) -> (String, String) {
        let (id, review_id) = self.pending_document(title, body).await;
        let r = self.approve(&review_id, &self.reviewer()).await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
        (id, review_id)
    }

    /// Submits the author's document `id` (expecting 201); returns the new review's id.
    pub async fn submitted(&self, id: &str) -> String {
        self.submitted_as(id, &self.author()).await
    }

    /// Submits the document `id` as `token`'s holder (expecting 201): the new review's id.
    pub async fn submitted_as(&self, id: &str, token: &str) -> String {
        let path = format!("/api/v1/documents/{id}/submit");
        let r = self.post(&path, token, json!({})).await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        let v: Value = r.json().await.unwrap();
        v["review"]["id"].as_str().unwrap().to_string()
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
}

/// A POST with an `Idempotency-Key`, to send (or send again).
pub fn keyed(
    app: &TestApp,
    path: &str,
    token: &str,
    key: &str,
    body: Value,
) -> reqwest::RequestBuilder {
    app.client
        .post(app.url(path))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(&body)
}

pub fn expose(s: &SecretString) -> &str {
    s.expose_secret()
}
