//! Builds everything a process runs from `Settings`, top-down: the stores, the lock gate,
//! the outbox dispatcher, the services, and the `AppState` the handlers share. Only
//! PostgreSQL must be reachable (and only to migrate): Redis, MongoDB and RabbitMQ may come
//! up later.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::lock::gate::LockGate;
use crate::lock::postgres::PgLockProvider;
use crate::lock::redis::RedisLockProvider;
use crate::lock::{LockKeys, LockProvider};
use crate::outbox::publisher::AmqpPublisher;
use crate::outbox::replay::ReplayRunner;
use crate::outbox::webhooks::Deliverer;
use crate::outbox::{Dispatcher, OutboxSettings};
use crate::shutdown::Deadline;
use crate::store::mongo::{CheckpointStore, MongoProjection};
use crate::store::PgStore;
use crate::tasks::{Backoff, Supervisor};
use crate::usecases::{
    schedule_reverifications, sweep_overdue, AuditService, CheckpointWriter, DocumentService,
    Idempotency, LeaseService, OutboxAdmin, PolicyService, Probes, ReplayService, Retention,
    RetentionSettings, ReviewService, ReviewSettings, ReviewStats, SpaceService, WebhookService,
};
use crate::web::body::BodyLimits;
use crate::web::metrics::HttpMetrics;
use crate::web::{AppState, EventDocs};

/// What `serve` and `dispatch` run on: the state the handlers share, the dispatcher, and
/// the supervisor of every background task (with the token that stops them).
pub struct Core {
    pub state: web::Data<AppState>,
    pub shutdown: CancellationToken,
    pub tasks: Arc<Supervisor>,
    dispatcher: Arc<Dispatcher>,
    store: PgStore,
}

impl Core {
    /// Starts the outbox dispatcher's background loops, the projection and the publish one.
    pub fn spawn_dispatcher(&self) {
        let d = self.dispatcher.clone();
        self.tasks.spawn("outbox.projector", move |stop| {
            d.clone().run_projection(stop)
        });
        let d = self.dispatcher.clone();
        self.tasks
            .spawn("outbox.publisher", move |stop| d.clone().run_publish(stop));
    }

    /// Signals the background tasks and joins them (aborting any still running when a
    /// second is all that is left before `deadline`), then writes the waiting done marks
    /// and closes the AMQP connection and the pool.
    pub async fn close(&self, deadline: Deadline) {
        let reserve = Duration::from_secs(1);
        let for_tasks = deadline.left(reserve).saturating_sub(reserve);
        self.tasks
            .stop(for_tasks.max(Duration::from_millis(100)))
            .await;
        self.dispatcher.flush_marks().await;
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
        let store = PgStore::from_settings(&s.database)?.with_audit(&s.audit);
        if s.database.migrate_on_start {
            store.migrate().await?;
        }
        store.say_whether_walled().await;
        let background = store.background(); // every space's rows (`store::scope`)
        let tasks = Arc::new(Supervisor::new(
            self.shutdown.clone(),
            Backoff::default(),
            s.test_hooks(),
        ));
        let gate = self.lock_gate(&tasks).await?;
        let mongo = MongoProjection::from_settings(&s.mongo).await?;
        let dispatcher = self.dispatcher(&background, &mongo).await;
        let stats = Arc::new(ReviewStats::new());
        let metrics = HttpMetrics::new(&stats);
        spawn_purger(&tasks, &background, &s.outbox, &metrics);
        let checkpoints = CheckpointStore::from_settings(&s.mongo, &s.audit).await?;
        let audit = AuditService::new(background.clone(), checkpoints.clone());
        metrics.register(audit.collectors());
        self.spawn_checkpointer(&tasks, &background, checkpoints, &dispatcher);
        let keys = LockKeys::new(s.redis.key_prefix.clone());
        let state = AppState {
            documents: DocumentService::new(
                store.clone(),
                mongo.clone(),
                dispatcher.clone(),
                s.review.default_policy.clone(),
            ),
            leases: self.leases(&store, &dispatcher),
            policies: PolicyService::new(store.clone()),
            reviews: ReviewService::new(
                store.clone(),
                gate.clone(),
                keys,
                dispatcher.clone(),
                stats.clone(),
            ),
            idempotency: Idempotency::from_settings(store.clone(), &s.idempotency),
            probes: Probes::new(
                background.clone(),
                gate,
                mongo,
                dispatcher.clone(),
                tasks.restarts(),
                s.server.probe_cache,
            ),
            outbox_admin: OutboxAdmin::new(store.clone()),
            replays: ReplayService::new(store.clone(), self.replay_runner(&background, &tasks)),
            audit,
            spaces: std::sync::Arc::new(SpaceService::new(store.clone())),
            webhooks: std::sync::Arc::new(WebhookService::new(
                store.clone(),
                s.webhooks.clone(),
                !s.environment.is_development(),
            )),
            metrics,
            body: BodyLimits {
                max_bytes: s.server.json_limit_bytes,
                timeout: s.server.body_timeout,
            },
            runtime: tokio::runtime::Handle::current(),
            test_hooks: s.test_hooks(),
            require_if_match: s.http.require_if_match,
            events: EventDocs::new(&s.amqp.exchange, &s.events),
        };
        spawn_sweepers(&tasks, &background, &s.review);
        self.spawn_deliverer(&tasks, &background, &dispatcher, &state.metrics);
        Ok(Core {
            state: web::Data::new(state),
            shutdown: self.shutdown,
            tasks,
            dispatcher,
            store,
        })
    }

    /// The webhooks' deliverer under `tasks`, announcing the endpoints it disables on the
    /// dispatcher's connection.
    fn spawn_deliverer(
        &self,
        tasks: &Supervisor,
        store: &PgStore,
        dispatcher: &Arc<Dispatcher>,
        metrics: &HttpMetrics,
    ) {
        let s = self.settings;
        let deliverer = Arc::new(Deliverer::new(
            store.clone(),
            dispatcher.publisher().clone(),
            s.events.clone(),
            s.webhooks.clone(),
            !s.environment.is_development(),
        ));
        metrics.register(deliverer.collectors());
        tasks.spawn("webhooks.deliverer", move |stop| {
            deliverer.clone().run(stop)
        });
    }

    /// The edit leases' service, on the database lock provider (`locks`, the service's pool).
    fn leases(&self, store: &PgStore, dispatcher: &Arc<Dispatcher>) -> LeaseService {
        let s = self.settings;
        let provider = PgLockProvider::new(store.pool(), s.database.statement_timeout);
        LeaseService::new(store.clone(), provider, dispatcher.clone(), &s.edit)
    }

    /// The outbox's dispatcher, with its AMQP publisher connected if the broker answers (if
    /// not, events wait in the outbox).
    async fn dispatcher(&self, store: &PgStore, mongo: &MongoProjection) -> Arc<Dispatcher> {
        let s = self.settings;
        let publisher = Arc::new(AmqpPublisher::from_settings(&s.amqp));
        if let Err(e) = publisher.ping().await {
            tracing::warn!(error = %e, "rabbitmq unreachable at start-up: events wait in the outbox");
        }
        let dispatcher = Dispatcher::new(
            store.clone(),
            mongo.clone(),
            publisher,
            s.outbox.clone(),
            s.events.clone(),
        );
        Arc::new(dispatcher.with_required_queues(s.amqp.required_queues.clone()))
    }

    /// The audit checkpoints' writer under `tasks`, publishing on the dispatcher's
    /// connection.
    fn spawn_checkpointer(
        &self,
        tasks: &Supervisor,
        store: &PgStore,
        checkpoints: CheckpointStore,
        dispatcher: &Dispatcher,
    ) {
        let s = self.settings;
        let writer = Arc::new(CheckpointWriter::new(
            store.clone(),
            checkpoints,
            dispatcher.publisher().clone(),
            s.events.clone(),
            s.audit.checkpoint_every,
        ));
        tasks.spawn("audit.checkpointer", move |stop| {
            let writer = writer.clone();
            async move { writer.run(stop).await }
        });
    }

    /// The replay runner, running under `tasks` when `replay.run` is on.
    fn replay_runner(&self, store: &PgStore, tasks: &Supervisor) -> Arc<ReplayRunner> {
        let s = self.settings;
        let runner = Arc::new(ReplayRunner::new(
            store.clone(),
            &s.amqp,
            s.replay.clone(),
            s.events.clone(),
        ));
        if s.replay.run {
            let r = runner.clone();
            tasks.spawn("replay.runner", move |stop| r.clone().run(stop));
        }
        runner
    }

    /// The Redis lock behind its gate, with the breaker's prober running under `tasks`.
    async fn lock_gate(&self, tasks: &Supervisor) -> anyhow::Result<Arc<LockGate>> {
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
        let (prober, every) = (
            gate.clone(),
            s.lock.breaker_open.max(Duration::from_millis(100)),
        );
        tasks.spawn("redis.prober", move |stop| {
            prober.clone().run_prober(every, stop)
        });
        Ok(gate)
    }
}

/// The purger (`usecases::Retention`) under `tasks`, its counters registered with
/// `metrics`.
/// The review workflow's sweepers under `tasks`: the overdue marks and the
/// re-verification scheduler.
fn spawn_sweepers(tasks: &Supervisor, store: &PgStore, s: &ReviewSettings) {
    let (swept, every, batch) = (store.clone(), s.overdue_sweep, s.overdue_batch);
    tasks.spawn("overdue.sweeper", move |stop| {
        sweep_overdue(swept.clone(), every, batch, stop)
    });
    let (scheduled, every, batch) = (store.clone(), s.reverify_sweep, s.reverify_batch);
    tasks.spawn("reverify.scheduler", move |stop| {
        schedule_reverifications(scheduled.clone(), every, batch, stop)
    });
}

fn spawn_purger(tasks: &Supervisor, store: &PgStore, s: &OutboxSettings, metrics: &HttpMetrics) {
    let settings = RetentionSettings::from_outbox(s);
    let retention = Arc::new(Retention::new(store.clone(), settings));
    metrics.register(retention.stats().collectors());
    tasks.spawn("purger", move |stop| {
        let retention = retention.clone();
        async move { retention.run(stop).await }
    });
}
