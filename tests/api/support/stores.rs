//! The stores of one test: their names (a fresh database per test, copied from the migrated
//! template, a Redis prefix, a MongoDB database, an exchange and a queue), and the test's
//! own clients of each, declared and checked at start so that a missing service fails
//! loudly with how to start it. Where the stores are, and the pieces the benchmark uses
//! too, are the test kit's (`kh_review_testkit`).

use kh_review_testkit::amqp::{amqp_connection, declare_exchange_and_queue, Lasting};
use kh_review_testkit::database::fresh_database;
use kh_review_testkit::stores::{mongo_database, pg_url, redis_client, unreachable, with_db};
use lapin::{Channel, Connection};
use sqlx::PgPool;
use uuid::Uuid;

/// A database copied from the template, which the service's own migrations make.
async fn create_test_database() -> String {
    let migrate = |pool: PgPool| async move { kh_review::store::migrate(&pool).await };
    fresh_database(migrate)
        .await
        .unwrap_or_else(|e| panic!("could not create test database: {e:#}"))
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
            .unwrap_or_else(|e| panic!("{:#}", unreachable("PostgreSQL", e)));
        let redis = redis_client().await.unwrap_or_else(|e| panic!("{e:#}"));
        let mongo = mongo_database(&shared.mongo_db)
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
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

/// The test's exchange, and a queue bound to every routing key on it.
async fn declare_queue(shared: &Shared) -> (Connection, Channel) {
    let conn = amqp_connection().await.unwrap_or_else(|e| panic!("{e:#}"));
    let amqp = conn.create_channel().await.unwrap();
    let (exchange, queue) = (&shared.exchange, &shared.queue);
    declare_exchange_and_queue(&amqp, exchange, queue, Lasting::Transient)
        .await
        .unwrap();
    (conn, amqp)
}
