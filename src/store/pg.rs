//! The PostgreSQL store: the pool, the server-side and client-side time bounds every
//! statement runs under, and the schema migrations. Its statements live in the modules named
//! after their subject (`documents`, `reviews`, `outbox`, `idempotency`), as methods of
//! [`PgStore`].
//!
//! Nothing here may wait on the database without the client-side bound: a partitioned
//! server never answers, and its own timeouts cannot fire then. A write transaction runs
//! whole under [`PgStore::bounded`]; a statement on the pool ends in
//! [`Statement::bounded`]. Both note a read-only answer (SQLSTATE 25006), after which the
//! pool closes every connection opened until then instead of handing it out again
//! ([`ReadOnlySeen`]); a new session is only added to the pool if it can write.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use super::error::{StoreError, StoreFailure};
use super::read_only::{refuse_read_only, ReadOnlySeen};
use crate::store::audit::chain::{AuditChain, AuditSettings};

/// A pooled connection used within this long is handed out again without a health check.
const FRESH: Duration = Duration::from_secs(1);

/// `[database]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    /// The service's sessions: a role that owns no table and lacks BYPASSRLS, so that
    /// row-level security holds for it (docs/operations.md, "Two database roles").
    pub url: SecretString,
    /// The migrations' sessions: the tables' owner (the same server and database as
    /// `url`). Unset: `url`'s, whose role must then own the tables, and row-level security
    /// does not hold for the service (it logs a warning at start).
    #[serde(default)]
    pub migrate_url: Option<SecretString>,
    pub max_connections: u32,
    /// The connections of the access pool: the one read every request makes before
    /// anything else (the caller's memberships) takes one of these, never one of the
    /// `max_connections` transactions need, so a storm of requests refused at once (a
    /// double-click storm, 409s) cannot fill the transactions' pool.
    #[serde(default = "default_access_connections")]
    pub access_connections: u32,
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

fn default_access_connections() -> u32 {
    4
}

impl DatabaseSettings {
    /// Client-side bound on a write transaction, and on any one statement outside one:
    /// row-lock wait plus the slowest statement, plus slack (the pause test hook sleeps
    /// inside transactions).
    pub fn tx_timeout(&self) -> Duration {
        self.lock_timeout + self.statement_timeout + Duration::from_secs(5)
    }
}

/// The pool's figures for `/metrics`, read without a round trip.
#[derive(Debug, Clone, Copy)]
pub struct PoolFigures {
    /// Open connections.
    pub size: u32,
    /// Open connections of the access pool (the memberships' reads), and of them idle.
    pub access_size: u32,
    pub access_idle: usize,
    /// Open connections nobody holds.
    pub idle: usize,
    /// Connections handed out since start (a pooled one or a new one).
    pub acquired: u64,
}

#[derive(Clone)]
pub struct PgStore {
    pub(super) pool: PgPool,
    /// The caller's memberships are read here (`[database] access_connections`).
    pub(super) access_pool: PgPool,
    /// Client-side bound on a whole write transaction, and on each statement run on the
    /// pool outside one: a partitioned database never answers, and the server-side
    /// timeouts cannot fire then.
    tx_timeout: Duration,
    /// Connections handed out, counted by the pool's hooks (`from_settings`).
    acquired: Arc<AtomicU64>,
    /// When a session last answered read-only; the pool's hooks read it.
    read_only: Arc<ReadOnlySeen>,
    /// The key audit rows are linked with (`[audit]`; see `with_audit`).
    pub(super) audit: AuditChain,
    /// Background work's store: its transactions declare `kh.background` (see `scope`).
    pub(super) background: bool,
    /// Where the migrations run (`database.migrate_url`, the tables' owner); None: the
    /// pool's own URL.
    migrate_with: Option<Arc<PgConnectOptions>>,
}

impl PgStore {
    /// A store over `pool`, whose sessions must already carry the `lock_timeout` wanted
    /// (`from_settings` sets it).
    pub fn new(pool: PgPool, tx_timeout: Duration) -> Self {
        let read_only = Arc::new(ReadOnlySeen::new());
        Self::over((pool.clone(), pool), tx_timeout, Arc::default(), read_only)
    }

    fn over(
        (pool, access_pool): (PgPool, PgPool),
        tx_timeout: Duration,
        acquired: Arc<AtomicU64>,
        read_only: Arc<ReadOnlySeen>,
    ) -> Self {
        Self {
            pool,
            access_pool,
            tx_timeout,
            acquired,
            read_only,
            audit: AuditChain::default(),
            background: false,
            migrate_with: None,
        }
    }

    /// The client-side bound of a transaction, or of a statement outside one.
    pub(super) fn tx_timeout(&self) -> Duration {
        self.tx_timeout
    }

    /// The store linking audit rows as `[audit]` says (without it: the development key).
    pub fn with_audit(mut self, settings: &AuditSettings) -> Self {
        self.audit = AuditChain::from_settings(settings);
        self
    }

    /// The store reading the admin chain's rows of `kind`'s kind as its type (see
    /// [`AuditChain::with_kind`]).
    pub fn with_admin_kind(mut self, kind: crate::domain::audit::format::AdminKind) -> Self {
        self.audit = self.audit.with_kind(kind);
        self
    }

    /// The key audit rows (and checkpoints of their chains) are linked with.
    pub fn audit_key(&self) -> &crate::domain::audit::AuditKey {
        self.audit.key()
    }

    pub fn pool_figures(&self) -> PoolFigures {
        PoolFigures {
            size: self.pool.size(),
            access_size: self.access_pool.size(),
            access_idle: self.access_pool.num_idle(),
            idle: self.pool.num_idle(),
            acquired: self.acquired.load(Ordering::Relaxed),
        }
    }

    /// The store `[database]` describes. Connects lazily: nothing is dialled yet.
    pub fn from_settings(settings: &DatabaseSettings) -> anyhow::Result<Self> {
        let opts = session_options(settings)?;
        let acquired = Arc::new(AtomicU64::new(0));
        let read_only = Arc::new(ReadOnlySeen::new());
        // Both pools, the transactions' and the access pool, are made alike.
        let pool = |max_connections: u32, opts: PgConnectOptions| {
            let (reused, opened) = (acquired.clone(), acquired.clone());
            let (on_acquire, on_release) = (read_only.clone(), read_only.clone());
            PgPoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(settings.acquire_timeout)
                // A connection used within the last second is handed out without a round trip;
                // one idle for longer is pinged first (a restarted server has closed it).
                .test_before_acquire(false)
                .before_acquire(move |conn, meta| {
                    let (reused, read_only) = (reused.clone(), on_acquire.clone());
                    Box::pin(async move {
                        if read_only.condemns(meta.age) {
                            return Ok(false); // closed; the pool takes or opens another
                        }
                        if meta.idle_for >= FRESH {
                            conn.ping().await?;
                        }
                        reused.fetch_add(1, Ordering::Relaxed);
                        Ok(true)
                    })
                })
                .after_release(move |_, meta| {
                    let keep = !on_release.condemns(meta.age);
                    Box::pin(async move { Ok(keep) })
                })
                // A new session on a standby (the proxy still routes to a demoted primary, or a
                // URL names a replica) is closed at once; the pool tries again until its acquire
                // timeout, so a failover that ends within it costs the request nothing.
                .after_connect(move |conn, _| {
                    let opened = opened.clone();
                    Box::pin(async move {
                        refuse_read_only(conn).await?;
                        opened.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    })
                })
                .connect_lazy_with(opts)
        };
        // The access pool's statements each read a few rows by key (a caller's memberships,
        // whether a document is visible): their generic plans are the same work, and
        // PostgreSQL would plan the memberships' `subject = ANY($1)` afresh at every request
        // (a custom plan for a short array always looks cheaper than the generic one).
        let access = opts
            .clone()
            .options([("plan_cache_mode", "force_generic_plan")]);
        let pools = (
            pool(settings.max_connections, opts),
            pool(settings.access_connections, access),
        );
        let mut store = Self::over(pools, settings.tx_timeout(), acquired, read_only);
        if let Some(url) = &settings.migrate_url {
            let owner: PgConnectOptions = url
                .expose_secret()
                .parse()
                .context("database.migrate_url is not a valid PostgreSQL URL")?;
            store.migrate_with = Some(Arc::new(owner));
        }
        Ok(store)
    }

    /// Runs a write transaction (begin to COMMIT) under the client-side bound; on timeout
    /// the future is dropped, which rolls its transaction back.
    pub async fn bounded<T, E>(&self, tx: impl Future<Output = Result<T, E>>) -> Result<T, E>
    where
        E: From<StoreError> + StoreFailure,
    {
        let done = tokio::time::timeout(self.tx_timeout, tx)
            .await
            .map_err(|_| StoreError::TimedOut(self.tx_timeout))?;
        if matches!(&done, Err(e) if e.read_only()) {
            self.read_only.note();
        }
        done
    }

    /// Applies the migrations under sqlx's advisory lock (see `run_migrations`), so
    /// instances may start together, on a connection of their own: not a pooled session, whose `statement_timeout` and
    /// `lock_timeout` would end a long migration, or the wait for another instance's, and
    /// make the instance fail and restart in a loop. Then, under the same lock, links the
    /// audit rows that carry no link yet (`audit::linking`).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        let opts = match &self.migrate_with {
            Some(owner) => (**owner).clone(),
            None => (*self.pool.connect_options()).clone(),
        };
        let dial = self.pool.options().get_acquire_timeout();
        let mut conn = tokio::time::timeout(dial, PgConnection::connect_with(&opts))
            .await
            .map_err(|_| anyhow::anyhow!("PostgreSQL did not answer within {dial:?}"))?
            .context("could not reach PostgreSQL")?;
        let ran = super::migrations::run_migrations(&mut conn, Some(&self.audit)).await;
        let _ = conn.close().await;
        ran
    }

    /// The pool of the service's sessions, for what keeps its own rows there (the database
    /// lock provider).
    pub fn pool(&self) -> PgPool {
        self.pool.clone()
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query!("SELECT 1 AS one")
            .fetch_one(&self.pool)
            .bounded(self)
            .await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.access_pool.close().await;
        self.pool.close().await;
    }
}

/// One statement on the pool, under the store's client-side bound: on timeout the
/// statement is dropped and the caller gets [`StoreError::TimedOut`] (a 503), never a hang.
pub(super) trait Statement<T>: Future<Output = Result<T, sqlx::Error>> + Sized {
    async fn bounded(self, store: &PgStore) -> Result<T, StoreError> {
        let bound = store.tx_timeout;
        match tokio::time::timeout(bound, self).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => {
                let e = StoreError::from(e);
                if e.read_only() {
                    store.read_only.note();
                }
                Err(e)
            }
            Err(_) => Err(StoreError::TimedOut(bound)),
        }
    }
}

impl<T, F: Future<Output = Result<T, sqlx::Error>>> Statement<T> for F {}

/// The sessions' connect options: `database.url`, with the settings every pooled session
/// carries. A session left idle inside a transaction (its client stalled or vanished
/// mid-way) is ended by the server, so its row locks do not outlive the client's own bound.
/// lock_timeout is a session setting, so a write transaction needs no statement to set it;
/// the outbox's takes skip locked rows and never wait on it.
fn session_options(settings: &DatabaseSettings) -> anyhow::Result<PgConnectOptions> {
    let opts: PgConnectOptions = settings
        .url
        .expose_secret()
        .parse()
        .context("database.url is not a valid PostgreSQL URL")?;
    Ok(opts.options([
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
    ]))
}
