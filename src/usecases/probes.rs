//! What operators read: each dependency's state for `/readyz`, and the counters and outbox
//! backlog for `/metrics`. Probes never change anything.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::breaker::BreakerState;
use crate::lock::gate::{LockGate, LockStats};
use crate::outbox::{DispatchStats, Dispatcher};
use crate::store::mongo::MongoProjection;
use crate::store::PgStore;

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
}

pub struct Probes {
    store: PgStore,
    gate: Arc<LockGate>,
    mongo: MongoProjection,
    dispatcher: Arc<Dispatcher>,
}

async fn check<E: std::fmt::Display>(probe: impl Future<Output = Result<(), E>>) -> Check {
    match tokio::time::timeout(Duration::from_secs(2), probe).await {
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

impl Probes {
    pub fn new(
        store: PgStore,
        gate: Arc<LockGate>,
        mongo: MongoProjection,
        dispatcher: Arc<Dispatcher>,
    ) -> Self {
        Self {
            store,
            gate,
            mongo,
            dispatcher,
        }
    }

    /// Every dependency, checked at once, each within 2 s.
    pub async fn readiness(&self) -> Readiness {
        let (postgresql, redis, mongodb, rabbitmq) = tokio::join!(
            check(self.store.ping()),
            check(self.gate.ping()),
            check(self.mongo.ping()),
            check(self.dispatcher.publisher().ping()),
        );
        Readiness {
            postgresql,
            redis,
            mongodb,
            rabbitmq,
            breaker: self.gate.breaker_state(),
            mongo_breaker: self.mongo.breaker_state(),
        }
    }

    /// Undelivered outbox rows and the age of the oldest; None when PostgreSQL does not
    /// answer within a second.
    pub async fn backlog(&self) -> Option<(i64, f64)> {
        tokio::time::timeout(Duration::from_secs(1), self.store.backlog())
            .await
            .ok()
            .and_then(|r| r.ok())
    }

    /// Parked outbox rows and how long the oldest has been parked; None when PostgreSQL
    /// does not answer within a second.
    pub async fn parked(&self) -> Option<(i64, f64)> {
        tokio::time::timeout(Duration::from_secs(1), self.store.parked())
            .await
            .ok()
            .and_then(|r| r.ok())
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
