//! What operators read: each dependency's state for `/readyz`, and the counters and outbox
//! backlog for `/metrics`. Probes never change anything.
//!
//! What costs a round trip (a pooled connection, a ping of each dependency, the outbox
//! counts) is read at most once per `server.probe_cache_ms` and shared ([`Recent`]): a
//! flood of scrapes during an outage must not take the connections the writes need.
//! Counters kept in memory are read live.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::breaker::BreakerState;
use crate::lock::gate::{LockGate, LockStats};
use crate::outbox::{DispatchStats, Dispatcher};
use crate::store::mongo::MongoProjection;
use crate::store::{PgStore, PoolFigures, StoreError};
use crate::tasks::TaskRestarts;

/// One dependency's state. `reason` can name hosts: it is for the log, not the client.
#[derive(Debug, Clone)]
pub struct Check {
    pub up: bool,
    pub reason: Option<String>,
}

impl Check {
    pub fn status(&self) -> &'static str {
        if self.up {
            "up"
        } else {
            "down"
        }
    }
}

#[derive(Debug, Clone)]
pub struct Readiness {
    pub postgresql: Check,
    pub redis: Check,
    pub mongodb: Check,
    pub rabbitmq: Check,
    /// The Redis breaker (the lock gate's).
    pub breaker: BreakerState,
    /// The MongoDB read breaker.
    pub mongo_breaker: BreakerState,
    /// `amqp.required_queues` and which of them exist.
    pub required_queues: QueuesCheck,
}

/// The required queues (`amqp.required_queues`): up when each exists.
#[derive(Debug, Clone, Default)]
pub struct QueuesCheck {
    pub names: Vec<String>,
    /// Those the broker says do not exist.
    pub missing: Vec<String>,
    /// Why the broker could not be asked (it is down): their state is not known.
    pub unknown: Option<String>,
}

impl QueuesCheck {
    pub fn up(&self) -> bool {
        self.names.is_empty() || (self.missing.is_empty() && self.unknown.is_none())
    }
}

/// The outbox figures of `/metrics`: undelivered and parked rows, each with an age; None
/// when PostgreSQL did not answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutboxFigures {
    pub backlog: Option<(i64, f64)>,
    pub parked: Option<(i64, f64)>,
    /// Documents due for re-verification with none opened yet, and how long the oldest
    /// has waited (the scheduler's lag).
    pub reverification: Option<(i64, f64)>,
}

/// How long a dependency's check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// A value read again at most once per `ttl`, by one caller at a time: callers that come
/// while a read is in flight wait for it and share its result (no thundering herd). The
/// age counts from the start of the read that produced it, so a value is never served more
/// than `ttl` after the state it describes was looked at. A zero `ttl` reads every time.
struct Recent<T> {
    ttl: Duration,
    slot: tokio::sync::Mutex<Option<(Instant, T)>>,
}

impl<T: Clone> Recent<T> {
    fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            slot: tokio::sync::Mutex::new(None),
        }
    }

    async fn get<F: Future<Output = T>>(&self, read: impl FnOnce() -> F) -> T {
        if self.ttl.is_zero() {
            return read().await;
        }
        // Held across the read: a caller dropped mid-read (its client left) releases it,
        // and the next one reads.
        let mut slot = self.slot.lock().await;
        if let Some((at, value)) = &*slot {
            if at.elapsed() < self.ttl {
                return value.clone();
            }
        }
        let started = Instant::now();
        let value = read().await;
        *slot = Some((started, value.clone()));
        value
    }
}

pub struct Probes {
    store: PgStore,
    gate: Arc<LockGate>,
    mongo: MongoProjection,
    dispatcher: Arc<Dispatcher>,
    restarts: Arc<TaskRestarts>,
    readiness: Recent<Readiness>,
    outbox: Recent<OutboxFigures>,
    /// Set once, at SIGTERM: the instance is going away (`/readyz` 503 `draining`).
    draining: AtomicBool,
}

async fn check<E: std::fmt::Display>(probe: impl Future<Output = Result<(), E>>) -> Check {
    match tokio::time::timeout(CHECK_TIMEOUT, probe).await {
        Ok(Ok(())) => Check {
            up: true,
            reason: None,
        },
        Ok(Err(e)) => Check {
            up: false,
            reason: Some(e.to_string()),
        },
        Err(_) => Check {
            up: false,
            reason: Some("timed out".into()),
        },
    }
}

async fn within_a_second<T>(read: impl Future<Output = Result<T, StoreError>>) -> Option<T> {
    let answered = tokio::time::timeout(Duration::from_secs(1), read).await;
    answered.ok().and_then(Result::ok)
}

impl Probes {
    /// Probes whose round trips are made at most once per `cache` (zero: every time).
    pub fn new(
        store: PgStore,
        gate: Arc<LockGate>,
        mongo: MongoProjection,
        dispatcher: Arc<Dispatcher>,
        restarts: Arc<TaskRestarts>,
        cache: Duration,
    ) -> Self {
        Self {
            store,
            gate,
            mongo,
            dispatcher,
            restarts,
            readiness: Recent::new(cache),
            outbox: Recent::new(cache),
            draining: AtomicBool::new(false),
        }
    }

    /// From now on the instance says it is going away: `/readyz` answers 503 `draining`
    /// (so a load balancer takes it out of rotation) while requests are still served.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Whether [`Probes::start_draining`] was called.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Every dependency, checked at once, each within 2 s; the answer is at most
    /// `server.probe_cache_ms` old (its breaker states are read now).
    pub async fn readiness(&self) -> Readiness {
        let mut r = self.readiness.get(|| self.check_all()).await;
        r.breaker = self.gate.breaker_state();
        r.mongo_breaker = self.mongo.breaker_state();
        r
    }

    async fn check_all(&self) -> Readiness {
        let (postgresql, redis, mongodb, rabbitmq, queues) = tokio::join!(
            check(self.store.ping()),
            check(self.gate.ping()),
            check(self.mongo.ping()),
            check(self.dispatcher.publisher().ping()),
            tokio::time::timeout(CHECK_TIMEOUT, self.dispatcher.required_queues()),
        );
        let required_queues = match queues {
            Ok((names, Ok(missing))) => QueuesCheck {
                names,
                missing,
                unknown: None,
            },
            Ok((names, Err(e))) => QueuesCheck {
                names,
                missing: Vec::new(),
                unknown: Some(format!("{e:#}")),
            },
            Err(_) => QueuesCheck {
                names: self.dispatcher.required_queue_names(),
                missing: Vec::new(),
                unknown: Some("timed out".into()),
            },
        };
        Readiness {
            postgresql,
            redis,
            mongodb,
            rabbitmq,
            breaker: self.gate.breaker_state(),
            mongo_breaker: self.mongo.breaker_state(),
            required_queues,
        }
    }

    /// The outbox backlog and parked rows, at most `server.probe_cache_ms` old; each None
    /// when PostgreSQL does not answer within a second.
    pub async fn outbox(&self) -> OutboxFigures {
        self.outbox
            .get(|| async {
                let (backlog, parked, reverification) = tokio::join!(
                    within_a_second(self.store.backlog()),
                    within_a_second(self.store.parked()),
                    within_a_second(self.store.reverification_lag())
                );
                OutboxFigures {
                    backlog,
                    parked,
                    reverification,
                }
            })
            .await
    }

    /// Each background task's name and how often it was restarted.
    pub fn task_restarts(&self) -> Vec<(&'static str, u64)> {
        self.restarts.snapshot()
    }

    /// The PostgreSQL pool's figures, now (no round trip).
    pub fn pool(&self) -> PoolFigures {
        self.store.pool_figures()
    }

    pub fn lock_stats(&self) -> &LockStats {
        self.gate.stats()
    }

    pub fn breaker_state(&self) -> BreakerState {
        self.gate.breaker_state()
    }

    pub fn dispatch_stats(&self) -> &DispatchStats {
        self.dispatcher.stats()
    }
}
