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
use sqlx::{Connection, PgPool};

use super::error::StoreError;

/// A pooled connection used within this long is handed out again without a health check.
const FRESH: Duration = Duration::from_secs(1);

/// `[database]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    pub url: SecretString,
    pub max_connections: u32,
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "acquire_timeout_ms")]
    pub acquire_timeout: Duration,
    /// `lock_timeout` of every pooled session: how long a statement waits for a row lock.
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
    /// Client-side bound on a whole write transaction: a partitioned database never
    /// answers, and the server-side timeouts cannot fire then.
    tx_timeout: Duration,
}

impl PgStore {
    /// A store over `pool`, whose sessions must already carry the `lock_timeout` wanted
    /// (`from_settings` sets it).
    pub fn new(pool: PgPool, tx_timeout: Duration) -> Self {
        Self { pool, tx_timeout }
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
        // lock_timeout is a session setting, so a write transaction needs no statement to
        // set it; the outbox claims skip locked rows and never wait on it.
        let opts = opts.options([
            (
                "lock_timeout",
                settings.lock_timeout.as_millis().max(1).to_string(),
            ),
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
            // A connection used within the last second is handed out without a round trip;
            // one idle for longer is pinged first (a restarted server has closed it).
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= FRESH {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect_lazy_with(opts);
        Ok(Self::new(pool, settings.tx_timeout()))
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
/// Waits for another instance's migration however long it takes (the pool's sessions would
/// give up on its advisory lock after `lock_timeout`).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await.context("could not reach PostgreSQL")?;
    sqlx::query!("SELECT set_config('lock_timeout', '0', false)")
        .fetch_one(&mut *conn)
        .await?;
    let ran = sqlx::migrate!("./migrations")
        .run(&mut *conn)
        .await
        .context("could not apply database migrations");
    sqlx::query!("RESET lock_timeout")
        .execute(&mut *conn)
        .await?;
    ran
}
