//! The stores a test runs against: where they are, a fresh database per test (copied from
//! a migrated template), and the test's own connections to each, declared and checked at
//! start so that a missing service fails loudly with how to start it.

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use sqlx::{Connection as _, PgConnection, PgPool};
use tokio::sync::OnceCell;
use uuid::Uuid;

const HOW_TO_START: &str = "start the services with `make services` (scripts/services.sh up), \
                            or point APP__DATABASE__URL / APP__REDIS__URL / APP__AMQP__URLS / \
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
    // The first of the brokers (APP__AMQP__URLS is a comma-separated list).
    let urls = env_or("APP__AMQP__URLS", "amqp://guest:guest@127.0.0.1:5672/%2f");
    urls.split(',').next().unwrap_or_default().to_string()
}
pub fn mongo_url() -> String {
    env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017")
}

pub fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("database url has a path");
    format!("{base}/{db}")
}

/// `KH_TEST_TAG` (letters and digits, empty by default) keeps the databases of test runs
/// from different checkouts apart on one server: each tag has its own template and only
/// clears its own leftovers.
fn tag() -> String {
    env_or("KH_TEST_TAG", "")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase()
}

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// A migrated template database, made once per test process.
async fn template() -> &'static str {
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("kh_review_test_template{}", tag());
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
                "SELECT datname FROM pg_database WHERE datname LIKE $1 \
                 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = pg_database.datname)",
            )
            .bind(format!("kh\\_t\\_{}\\_%", tag()))
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
            kh_review::store::migrate(&pool).await.unwrap();
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
    let name = format!("kh_t_{}_{}", tag(), Uuid::new_v4().simple());
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

/// The per-test names of every store, shareable between instances.
#[derive(Clone)]
pub struct Shared {
    pub db_name: String,
    pub prefix: String,
    pub mongo_db: String,
    pub exchange: String,
    pub queue: String,
}

impl Shared {
    /// Fresh names for every store, and a database copied from the template.
    pub async fn create() -> Self {
        let id = Uuid::new_v4().simple().to_string();
        Shared {
            db_name: create_test_database().await,
            prefix: format!("t:{id}:"),
            mongo_db: format!("kh_t_{}", &id[..16]),
            exchange: format!("kh.test.{id}"),
            queue: format!("kh.test.{id}.all"),
        }
    }
}

/// The test's own clients of every store (the real ones, not through any proxy).
pub struct StoreClients {
    pub pg: PgPool,
    pub redis: redis::Client,
    pub amqp: Channel,
    pub mongo: mongodb::Database,
}

impl StoreClients {
    /// Connects to every store (failing loudly when one is missing) and declares the
    /// test's exchange and queue; the AMQP connection must outlive the clients.
    pub async fn connect(shared: &Shared) -> (Self, Connection) {
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
            .unwrap_or_else(|e| {
                panic!("MongoDB-compatible server unreachable ({e}): {HOW_TO_START}")
            });
        let (amqp_conn, amqp) = declare_queue(shared).await;
        let clients = Self {
            pg,
            redis,
            amqp,
            mongo,
        };
        (clients, amqp_conn)
    }
}

/// A connection to the tests' RabbitMQ, failing loudly when it is missing.
pub async fn amqp_connection() -> Connection {
    Connection::connect(
        &amqp_url(),
        ConnectionProperties::default()
            .with_executor(tokio_executor_trait::Tokio::current())
            .with_reactor(tokio_reactor_trait::Tokio),
    )
    .await
    .unwrap_or_else(|e| panic!("RabbitMQ unreachable ({e}): {HOW_TO_START}"))
}

/// The test's exchange, and a queue bound to every routing key on it.
async fn declare_queue(shared: &Shared) -> (Connection, Channel) {
    let conn = amqp_connection().await;
    let amqp = conn.create_channel().await.unwrap();
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    let (exchange, queue) = (&shared.exchange, &shared.queue);
    amqp.exchange_declare(
        exchange,
        ExchangeKind::Topic,
        durable,
        FieldTable::default(),
    )
    .await
    .unwrap();
    amqp.queue_declare(queue, QueueDeclareOptions::default(), FieldTable::default())
        .await
        .unwrap();
    let bind = QueueBindOptions::default();
    amqp.queue_bind(queue, exchange, "document.#", bind, FieldTable::default())
        .await
        .unwrap();
    (conn, amqp)
}
