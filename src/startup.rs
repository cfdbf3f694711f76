//! Wiring: build every store client, the lock gate, the dispatcher and the HTTP server from
//! `Settings`. `Application::build` binds the listener (port 0 in tests) and starts nothing
//! that can fail later for want of Redis, MongoDB or RabbitMQ: only PostgreSQL is required.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpRequest, HttpServer};
use anyhow::Context;
use secrecy::ExposeSecret;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::JwtVerifier;
use crate::config::Settings;
use crate::lock::breaker::CircuitBreaker;
use crate::lock::gate::LockGate;
use crate::lock::redis::RedisLockProvider;
use crate::lock::{LockKeys, LockProvider};
use crate::metrics::Metrics;
use crate::outbox::publisher::AmqpPublisher;
use crate::outbox::Dispatcher;
use crate::review::{Hooks, ReviewService};
use crate::store::mongo::MongoProjection;
use crate::store::pg::PgStore;

/// Test-only request headers, honoured only with `server.test_hooks` on.
/// Pause a transition after its row locks, right before the lease check and COMMIT.
pub const PAUSE_HEADER: &str = "x-test-pause-before-commit-ms";
/// Pause a transition after the outer lock is taken, before its transaction begins.
pub const PAUSE_AFTER_LOCK_HEADER: &str = "x-test-pause-after-lock-ms";
/// Stop renewing the lease, as if the whole process were frozen.
pub const SUSPEND_RENEWAL_HEADER: &str = "x-test-suspend-renewal";
/// Skip the delivery attempt after COMMIT, as if the instance died right after it.
pub const SKIP_DISPATCH_HEADER: &str = "x-test-skip-dispatch";
/// Answer 503 after a successful COMMIT, as if the reply had been lost.
pub const FAIL_AFTER_COMMIT_HEADER: &str = "x-test-fail-after-commit";

/// Everything a handler can reach.
pub struct AppState {
    pub store: PgStore,
    pub mongo: MongoProjection,
    pub reviews: Arc<ReviewService>,
    pub dispatcher: Arc<Dispatcher>,
    pub redis: RedisLockProvider,
    pub metrics: Arc<Metrics>,
    pub idempotency: IdempotencyPolicy,
    pub test_hooks: bool,
}

/// Lifetimes of idempotency records.
#[derive(Debug, Clone, Copy)]
pub struct IdempotencyPolicy {
    pub ttl: Duration,
    pub in_flight_for: Duration,
}

impl AppState {
    /// Test hooks of this request; always empty unless `server.test_hooks` is on.
    pub fn hooks(&self, req: &HttpRequest) -> Hooks {
        if !self.test_hooks {
            return Hooks::default();
        }
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        let ms = |name: &str| {
            header(name)
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        Hooks {
            pause_before_commit: ms(PAUSE_HEADER),
            pause_after_lock: ms(PAUSE_AFTER_LOCK_HEADER),
            suspend_renewal: header(SUSPEND_RENEWAL_HEADER) == Some("true"),
            skip_dispatch: header(SKIP_DISPATCH_HEADER) == Some("true"),
            fail_after_commit: header(FAIL_AFTER_COMMIT_HEADER) == Some("true"),
        }
    }
}

pub async fn connect_pg(settings: &Settings) -> anyhow::Result<PgPool> {
    let db = &settings.database;
    let opts: sqlx::postgres::PgConnectOptions = db
        .url
        .expose_secret()
        .parse()
        .context("database.url is not a valid PostgreSQL URL")?;
    // A session left idle inside a transaction (its client stalled or vanished mid-way) is
    // ended by the server, so its row locks do not outlive the client's own timeout.
    let idle_in_tx = tx_timeout(settings).as_millis();
    let opts = opts.options([
        ("statement_timeout", db.statement_timeout_ms.to_string()),
        (
            "idle_in_transaction_session_timeout",
            idle_in_tx.to_string(),
        ),
    ]);
    Ok(PgPoolOptions::new()
        .max_connections(db.max_connections)
        .acquire_timeout(Duration::from_millis(db.acquire_timeout_ms))
        .connect_lazy_with(opts))
}

/// Applies the migrations under sqlx's advisory lock, so instances may start together.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("./migrations")
        .run(pool)
        .await
        .context("could not apply database migrations")
}

/// Client-side bound on a write transaction: row-lock wait plus the slowest statement, plus
/// slack (the pause test hook sleeps inside transactions).
fn tx_timeout(settings: &Settings) -> Duration {
    Duration::from_millis(
        settings.database.lock_timeout_ms + settings.database.statement_timeout_ms + 5000,
    )
}

/// The parts shared by `serve` and `dispatch`.
pub struct Core {
    pub state: web::Data<AppState>,
    pub shutdown: CancellationToken,
}

impl Core {
    pub async fn build(settings: &Settings) -> anyhow::Result<Self> {
        let shutdown = CancellationToken::new();
        let pool = connect_pg(settings).await?;
        if settings.database.migrate_on_start {
            migrate(&pool).await?;
        }
        let redis = RedisLockProvider::new(
            settings.redis.url.expose_secret(),
            settings.redis.pool_size,
            Duration::from_millis(settings.redis.op_timeout_ms),
        )?;
        match redis.ping().await {
            Ok(()) => tracing::info!("redis reachable"),
            Err(e) => {
                tracing::warn!(error = %e, "redis unreachable at start-up: serving with the row lock only until it is back")
            }
        }
        let provider: Arc<dyn LockProvider> = Arc::new(redis.clone());
        let gate = Arc::new(
            LockGate::new(
                provider,
                CircuitBreaker::new(
                    settings.lock.breaker_failure_threshold,
                    Duration::from_millis(settings.lock.breaker_open_ms),
                ),
                settings.lock_ttl(),
                settings.renew_every(),
                Duration::from_millis(settings.lock.max_hold_ms),
                Duration::from_secs(settings.lock.retry_after_secs),
                shutdown.clone(),
            )
            .with_probe_key(format!("{}lock:probe", settings.redis.key_prefix)),
        );
        spawn_purger(
            pool.clone(),
            Duration::from_secs(settings.outbox.retention_hours * 3600),
            shutdown.clone(),
        );
        gate.spawn_prober(Duration::from_millis(
            settings.lock.breaker_open_ms.max(100),
        ));
        let mongo = MongoProjection::new(
            settings.mongo.url.expose_secret(),
            &settings.mongo.database,
            &settings.mongo.collection,
            Duration::from_millis(settings.mongo.timeout_ms),
        )
        .await?;
        let bind_queue = Some(settings.amqp.bind_queue.clone()).filter(|q| !q.trim().is_empty());
        let publisher = Arc::new(AmqpPublisher::new(
            settings.amqp.url.clone(),
            settings.amqp.exchange.clone(),
            bind_queue,
            Duration::from_millis(settings.amqp.timeout_ms),
        ));
        if let Err(e) = publisher.ping().await {
            tracing::warn!(error = %e, "rabbitmq unreachable at start-up: events wait in the outbox");
        }
        let store = PgStore::new(
            pool.clone(),
            Duration::from_millis(settings.database.lock_timeout_ms),
            tx_timeout(settings),
        );
        let dispatcher = Arc::new(Dispatcher::new(
            pool,
            mongo.clone(),
            publisher,
            settings.outbox.clone(),
        ));
        let metrics = Arc::new(Metrics::new());
        let reviews = Arc::new(ReviewService::new(
            store.clone(),
            gate,
            LockKeys::new(settings.redis.key_prefix.clone()),
            dispatcher.clone(),
            metrics.clone(),
        ));
        let state = web::Data::new(AppState {
            store,
            mongo,
            reviews,
            dispatcher,
            redis,
            metrics,
            idempotency: IdempotencyPolicy {
                ttl: Duration::from_secs(settings.idempotency.ttl_secs),
                in_flight_for: Duration::from_millis(settings.idempotency.in_flight_timeout_ms),
            },
            test_hooks: settings.server.test_hooks,
        });
        Ok(Self { state, shutdown })
    }

    pub fn spawn_dispatcher(&self) -> JoinHandle<()> {
        let d = self.state.dispatcher.clone();
        tokio::spawn(d.run(self.shutdown.clone()))
    }
}

/// Deletes expired idempotency records and old delivered outbox rows once a minute.
fn spawn_purger(pool: PgPool, keep_outbox: Duration, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
            match crate::store::idempotency::purge_expired(&pool).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(purged = n, "expired idempotency records deleted"),
                Err(e) => tracing::warn!(error = %e, "could not purge idempotency records"),
            }
            match crate::store::outbox::purge_delivered(&pool, keep_outbox).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(purged = n, "old delivered outbox rows deleted"),
                Err(e) => tracing::warn!(error = %e, "could not purge the outbox"),
            }
        }
    });
}

pub struct Application {
    port: u16,
    server: Server,
    core: Core,
    dispatcher: Option<JoinHandle<()>>,
}

impl Application {
    /// Binds `server.host:server.port` (0 picks a free port) and wires everything.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let core = Core::build(&settings).await?;
        let listener = TcpListener::bind((settings.server.host.as_str(), settings.server.port))
            .with_context(|| {
                format!(
                    "could not bind {}:{}",
                    settings.server.host, settings.server.port
                )
            })?;
        let port = listener.local_addr()?.port();
        let state = core.state.clone();
        let verifier = web::Data::new(JwtVerifier::new(&settings.auth.jwt_secret));
        let limit = settings.server.json_limit_bytes;
        let server = HttpServer::new(move || {
            App::new()
                .wrap(from_fn(crate::http::request_id::middleware))
                .app_data(state.clone())
                .app_data(verifier.clone())
                .configure(|c| crate::http::configure(c, limit))
        })
        .shutdown_timeout(settings.server.shutdown_grace_ms.div_ceil(1000))
        .disable_signals()
        .listen(listener)?
        .run();
        let dispatcher = settings
            .outbox
            .run_dispatcher
            .then(|| core.spawn_dispatcher());
        Ok(Self {
            port,
            server,
            core,
            dispatcher,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    pub fn shutdown_token(&self) -> CancellationToken {
        self.core.shutdown.clone()
    }

    /// Serves until the server is stopped (via [`Application::handle`] or a signal wired
    /// by the caller), then stops the dispatcher after its batch and closes the pools.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let result = self.server.await;
        self.core.shutdown.cancel();
        if let Some(d) = self.dispatcher {
            let _ = d.await;
        }
        self.core.state.dispatcher.publisher().close().await;
        self.core.state.store.pool().close().await;
        result.context("http server failed")
    }
}
