//! Builds everything a process runs from `Settings`, top-down: the stores, the lock gate,
//! the outbox dispatcher, the services, and the `AppState` the handlers share. Only
//! PostgreSQL must be reachable (and only to migrate): Redis, MongoDB and RabbitMQ may come
//! up later.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::http::metrics::HttpMetrics;
use crate::http::AppState;
use crate::lock::gate::LockGate;
use crate::lock::redis::RedisLockProvider;
use crate::lock::{LockKeys, LockProvider};
use crate::outbox::publisher::AmqpPublisher;
use crate::outbox::Dispatcher;
use crate::store::mongo::MongoProjection;
use crate::store::PgStore;
use crate::usecases::{
    DocumentService, Idempotency, OutboxAdmin, Probes, ReviewService, ReviewStats,
};

/// What `serve` and `dispatch` run on: the state the handlers share, the dispatcher, and
/// the token that stops every background task.
pub struct Core {
    pub state: web::Data<AppState>,
    pub shutdown: CancellationToken,
    dispatcher: Arc<Dispatcher>,
    store: PgStore,
}

impl Core {
    /// Starts the outbox dispatcher's background loop.
    pub fn spawn_dispatcher(&self) -> JoinHandle<()> {
        tokio::spawn(self.dispatcher.clone().run(self.shutdown.clone()))
    }

    /// Stops the background tasks, then closes the AMQP connection and the pool.
    pub async fn close(&self) {
        self.shutdown.cancel();
        self.dispatcher.publisher().close().await;
        self.store.close().await;
    }
}

pub struct CoreBuilder<'a> {
    settings: &'a Settings,
    shutdown: CancellationToken,
}

impl<'a> CoreBuilder<'a> {
    pub fn new(settings: &'a Settings) -> Self {
        Self {
            settings,
            shutdown: CancellationToken::new(),
        }
    }

    pub async fn build(self) -> anyhow::Result<Core> {
        let s = self.settings;
        // Settings built in code get the checks of loaded ones (the secret, the test hooks).
        s.validate()?;
        let store = PgStore::from_settings(&s.database)?;
        if s.database.migrate_on_start {
            store.migrate().await?;
        }
        let gate = self.lock_gate().await?;
        let mongo = MongoProjection::from_settings(&s.mongo).await?;
        let publisher = Arc::new(AmqpPublisher::from_settings(&s.amqp));
        if let Err(e) = publisher.ping().await {
            tracing::warn!(error = %e, "rabbitmq unreachable at start-up: events wait in the outbox");
        }
        let dispatcher = Arc::new(Dispatcher::new(
            store.clone(),
            mongo.clone(),
            publisher,
            s.outbox.clone(),
        ));
        let stats = Arc::new(ReviewStats::new());
        let keys = LockKeys::new(s.redis.key_prefix.clone());
        let state = AppState {
            documents: DocumentService::new(store.clone(), mongo.clone(), dispatcher.clone()),
            reviews: ReviewService::new(
                store.clone(),
                gate.clone(),
                keys,
                dispatcher.clone(),
                stats.clone(),
            ),
            idempotency: Idempotency::from_settings(store.clone(), &s.idempotency),
            probes: Probes::new(
                store.clone(),
                gate,
                mongo,
                dispatcher.clone(),
                s.server.probe_cache,
            ),
            outbox_admin: OutboxAdmin::new(store.clone()),
            metrics: HttpMetrics::new(&stats),
            json_limit: s.server.json_limit_bytes,
            runtime: tokio::runtime::Handle::current(),
            test_hooks: s.test_hooks(),
        };
        spawn_purger(store.clone(), s.outbox.retention(), self.shutdown.clone());
        Ok(Core {
            state: web::Data::new(state),
            shutdown: self.shutdown,
            dispatcher,
            store,
        })
    }

    /// The Redis lock behind its gate, with the breaker's prober running.
    async fn lock_gate(&self) -> anyhow::Result<Arc<LockGate>> {
        let s = self.settings;
        let redis = RedisLockProvider::from_settings(&s.redis, s.lock.fence_retention())?;
        match redis.ping().await {
            Ok(()) => tracing::info!("redis reachable"),
            Err(e) => {
                tracing::warn!(error = %e, "redis unreachable at start-up: serving with the row lock only until it is back")
            }
        }
        let provider: Arc<dyn LockProvider> = Arc::new(redis);
        let probe_key = LockKeys::new(s.redis.key_prefix.clone()).probe();
        let gate = Arc::new(LockGate::from_settings(
            provider,
            &s.lock,
            probe_key,
            self.shutdown.clone(),
        )?);
        gate.spawn_prober(s.lock.breaker_open.max(Duration::from_millis(100)));
        Ok(gate)
    }
}

/// Deletes expired idempotency records and old delivered outbox rows once a minute.
fn spawn_purger(store: PgStore, keep_outbox: Duration, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
            match store.purge_expired_keys().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(purged = n, "expired idempotency records deleted"),
                Err(e) => tracing::warn!(error = %e, "could not purge idempotency records"),
            }
            match store.purge_delivered(keep_outbox).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(purged = n, "old delivered outbox rows deleted"),
                Err(e) => tracing::warn!(error = %e, "could not purge the outbox"),
            }
        }
    });
}
