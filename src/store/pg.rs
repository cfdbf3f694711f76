//! The PostgreSQL store: the pool, the server-side and client-side time bounds every write
//! runs under, and the schema migrations. Its statements live in the modules named after
//! their subject (`documents`, `reviews`, `outbox`, `idempotency`), as methods of [`PgStore`].

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use super::error::StoreError;

/// `[database]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    pub url: SecretString,
    pub max_connections: u32,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "acquire_timeout_ms")]
    pub acquire_timeout: Duration,
    /// `SET LOCAL lock_timeout` of every write transaction.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "lock_timeout_ms")]
    pub lock_timeout: Duration,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "statement_timeout_ms")]
    pub statement_timeout: Duration,
    pub migrate_on_start: bool,
}

impl DatabaseSettings {
    /// Client-side bound on a write transaction: row-lock wait plus the slowest statement,
    /// plus slack (the pause test hook sleeps inside transactions).
    pub fn tx_timeout(&self) -> Duration {
        self.lock_timeout + self.statement_timeout + Duration::from_secs(5)
    }
}

#[derive(Clone)]
pub struct PgStore {
    pub(super) pool: PgPool,
    /// `SET LOCAL lock_timeout` of every write transaction.
    pub(super) lock_timeout: Duration,
    /// Client-side bound on a whole write transaction: a partitioned database never
    /// answers, and the server-side timeouts cannot fire then.
    tx_timeout: Duration,
}

impl PgStore {
    pub fn new(pool: PgPool, lock_timeout: Duration, tx_timeout: Duration) -> Self {
        Self {
            pool,
            lock_timeout,
            tx_timeout,
        }
    }

    /// The store `[database]` describes. Connects lazily: nothing is dialled yet.
    pub fn from_settings(settings: &DatabaseSettings) -> anyhow::Result<Self> {
        let opts: PgConnectOptions = settings
            .url
            .expose_secret()
            .parse()
            .context("database.url is not a valid PostgreSQL URL")?;
        // A session left idle inside a transaction (its client stalled or vanished mid-way)
        // is ended by the server, so its row locks do not outlive the client's own bound.
        let opts = opts.options([
            (
                "statement_timeout",
                settings.statement_timeout.as_millis().to_string(),
            ),
            (
                "idle_in_transaction_session_timeout",
                settings.tx_timeout().as_millis().to_string(),
            ),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .connect_lazy_with(opts);
        Ok(Self::new(
            pool,
            settings.lock_timeout,
            settings.tx_timeout(),
        ))
    }

    /// Runs a write transaction (begin to COMMIT) under the client-side bound; on timeout
    /// the future is dropped, which rolls its transaction back.
    pub async fn bounded<T, E>(&self, tx: impl Future<Output = Result<T, E>>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        tokio::time::timeout(self.tx_timeout, tx)
            .await
            .map_err(|_| StoreError::TimedOut(self.tx_timeout))?
    }

    /// Applies the migrations under sqlx's advisory lock, so instances may start together.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        migrate(&self.pool).await
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query!("SELECT 1 AS one")
            .fetch_one(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Applies the migrations in `migrations/` to `pool`'s database.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("./migrations")
        .run(pool)
        .await
        .context("could not apply database migrations")
}
