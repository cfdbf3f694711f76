//! Readiness: each dependency as the probes see it now, PostgreSQL required; Redis,
//! MongoDB, RabbitMQ and the required queues reported one by one (an optional one down
//! means degraded, not unready). `/readyz` answers it as JSON; the console's operator page
//! shows it.

use serde::Serialize;
use utoipa::ToSchema;

use super::state::AppState;
use crate::breaker::BreakerState;

/// The answer of `/readyz`.
#[derive(Serialize, ToSchema)]
#[schema(as = Readiness)]
pub struct ReadinessView {
    pub status: ReadyState,
    pub checks: Checks,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadyState {
    /// Every dependency is up.
    Ready,
    /// PostgreSQL is up, an optional dependency is down.
    Degraded,
    /// PostgreSQL is down (with 503).
    NotReady,
    /// The instance is shutting down (with 503): it still serves requests for
    /// `shutdown.drain_secs`, then stops accepting them.
    Draining,
}

#[derive(Serialize, ToSchema)]
pub struct Checks {
    pub postgresql: DependencyCheck,
    pub redis: BreakerCheck,
    pub mongodb: BreakerCheck,
    pub rabbitmq: DependencyCheck,
    pub required_queues: RequiredQueuesCheck,
}

/// The consumer queues that must receive every event (`amqp.required_queues`): down while
/// one of them is missing (its events wait in the outbox), or while the broker cannot be
/// asked. Up when none is configured.
#[derive(Serialize, ToSchema)]
pub struct RequiredQueuesCheck {
    pub status: UpDown,
    pub required: bool,
    /// The queues configured.
    pub queues: Vec<String>,
    /// Those that do not exist now.
    pub missing: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct DependencyCheck {
    pub status: UpDown,
    /// Whether the service is unready without it.
    pub required: bool,
}

/// A dependency the service skips behind a circuit breaker while it is down.
#[derive(Serialize, ToSchema)]
pub struct BreakerCheck {
    pub status: UpDown,
    pub required: bool,
    pub circuit_breaker: Breaker,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpDown {
    Up,
    Down,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Breaker {
    Closed,
    Open,
    HalfOpen,
}

impl ReadyState {
    pub fn as_str(&self) -> &'static str {
        match self {
            ReadyState::Ready => "ready",
            ReadyState::Degraded => "degraded",
            ReadyState::NotReady => "not_ready",
            ReadyState::Draining => "draining",
        }
    }
}

impl UpDown {
    pub fn as_str(&self) -> &'static str {
        match self {
            UpDown::Up => "up",
            UpDown::Down => "down",
        }
    }
}

impl Breaker {
    pub fn as_str(&self) -> &'static str {
        match self {
            Breaker::Closed => "closed",
            Breaker::Open => "open",
            Breaker::HalfOpen => "half_open",
        }
    }
}

fn check(up: bool, required: bool) -> DependencyCheck {
    let status = if up { UpDown::Up } else { UpDown::Down };
    DependencyCheck { status, required }
}

fn breaker(b: BreakerState) -> Breaker {
    match b {
        BreakerState::Closed => Breaker::Closed,
        BreakerState::Open => Breaker::Open,
        BreakerState::HalfOpen => Breaker::HalfOpen,
    }
}
/// Every dependency's state now; `/readyz` and the console's operator page both ask here.
pub async fn readiness(state: &AppState) -> ReadinessView {
    let r = state.probes.readiness().await;
    let queues = &r.required_queues;
    let optional_down = !(r.redis.up && r.mongodb.up && r.rabbitmq.up && queues.up());
    let status = if state.probes.draining() {
        ReadyState::Draining
    } else if !r.postgresql.up {
        ReadyState::NotReady
    } else if optional_down {
        ReadyState::Degraded
    } else {
        ReadyState::Ready
    };
    // Failure reasons of dependencies are kept to the log: they can name hosts.
    for (name, check) in [
        ("postgresql", &r.postgresql),
        ("redis", &r.redis),
        ("mongodb", &r.mongodb),
        ("rabbitmq", &r.rabbitmq),
    ] {
        if let Some(why) = &check.reason {
            tracing::warn!(dependency = name, state = check.status(), reason = %why, "readiness probe");
        }
    }
    if !queues.missing.is_empty() {
        tracing::warn!(missing = ?queues.missing, "readiness probe: required queues missing; their events wait");
    }
    if let Some(why) = &queues.unknown {
        tracing::warn!(queues = ?queues.names, reason = %why, "readiness probe: could not ask for the required queues");
    }
    let guarded = |up: bool, state: BreakerState| {
        let c = check(up, false);
        BreakerCheck {
            status: c.status,
            required: c.required,
            circuit_breaker: breaker(state),
        }
    };
    ReadinessView {
        status,
        checks: Checks {
            postgresql: check(r.postgresql.up, true),
            redis: guarded(r.redis.up, r.breaker),
            mongodb: guarded(r.mongodb.up, r.mongo_breaker),
            rabbitmq: check(r.rabbitmq.up, false),
            required_queues: RequiredQueuesCheck {
                status: check(queues.up(), false).status,
                required: false,
                queues: queues.names.clone(),
                missing: queues.missing.clone(),
            },
        },
    }
}
