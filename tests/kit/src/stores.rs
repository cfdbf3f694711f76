//! Where the stores are: the URLs `scripts/services.sh env` prints as `APP__*` variables
//! (the service's own names for them), with the local defaults of `make services`; and the
//! first connection to each, which fails loudly, saying how to start the services, when a
//! store is missing.

use std::fmt::Display;

use sqlx::{Connection as _, PgConnection};

/// What a missing store's error says to do.
pub const HOW_TO_START: &str = "start the services with `make services` (scripts/services.sh up), \
                                or point APP__DATABASE__URL / APP__REDIS__URL / APP__AMQP__URLS / \
                                APP__MONGO__URL at running servers";

/// The error of a store that did not answer: `what` unreachable (why): how to start it.
pub fn unreachable(what: &str, error: impl Display) -> anyhow::Error {
    anyhow::anyhow!("{what} unreachable ({error}): {HOW_TO_START}")
}

pub fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

/// The PostgreSQL server's URL (`APP__DATABASE__URL`), with its own database.
pub fn pg_url() -> String {
    env_or(
        "APP__DATABASE__URL",
        "postgres://kh:kh@127.0.0.1:5432/kh_review",
    )
}

/// The URL of the service's own role on that server (`KH_SERVICE_DATABASE_URL`): kh_app,
/// a member of kh_service that owns nothing and lacks BYPASSRLS, so row-level security
/// holds for it (scripts/sql/service-role.sql).
pub fn pg_service_url() -> String {
    env_or(
        "KH_SERVICE_DATABASE_URL",
        "postgres://kh_app:kh_app@127.0.0.1:5432/kh_review",
    )
}

pub fn redis_url() -> String {
    env_or("APP__REDIS__URL", "redis://127.0.0.1:6379")
}

/// The first of the brokers (`APP__AMQP__URLS` is a comma-separated list).
pub fn amqp_url() -> String {
    let urls = env_or("APP__AMQP__URLS", "amqp://guest:guest@127.0.0.1:5672/%2f");
    urls.split(',').next().unwrap_or_default().to_string()
}

pub fn mongo_url() -> String {
    env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017")
}

/// `url` with its database (the last path segment) replaced by `db`.
pub fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("database url has a path");
    format!("{base}/{db}")
}

/// A connection to the PostgreSQL server's own database (to create and drop others).
pub async fn pg_admin() -> anyhow::Result<PgConnection> {
    PgConnection::connect(&pg_url())
        .await
        .map_err(|e| unreachable("PostgreSQL", e))
}

/// A client of the Redis at `redis_url()`, checked with a PING.
pub async fn redis_client() -> anyhow::Result<redis::Client> {
    let client = redis::Client::open(redis_url())?;
    let mut c = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| unreachable("Redis", e))?;
    let _: String = redis::cmd("PING").query_async(&mut c).await?;
    Ok(client)
}

/// The database `name` on the MongoDB-compatible server at `mongo_url()`, checked with a
/// ping.
pub async fn mongo_database(name: &str) -> anyhow::Result<mongodb::Database> {
    let db = mongodb::Client::with_uri_str(mongo_url())
        .await?
        .database(name);
    db.run_command(mongodb::bson::doc! {"ping": 1})
        .await
        .map_err(|e| unreachable("MongoDB-compatible server", e))?;
    Ok(db)
}
