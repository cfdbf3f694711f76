//! The operator's page (role `admin`): each dependency as `/readyz` sees it, with the
//! circuit breakers; delivery (backlog, oldest undelivered event, events in the last
//! minute); parked events with retry and skip; replays (`replays.rs`); webhooks, with
//! their latest deliveries and a re-send (`webhooks.rs`). The page reloads it every few
//! seconds.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use uuid::Uuid;

use super::charts::{self, Charts};
use super::render::{duration, rendered, waited, when, Shown};
use crate::store::{OutboxAction, OutboxFilter};
use crate::usecases::OutboxStats;
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::post::{self, Ran};
use crate::web::readiness::{readiness, ReadinessView};
use crate::web::request_id;
use crate::web::state::AppState;

/// Parked events the page lists.
const PARKED_ROWS: i64 = 50;

/// One dependency's line.
pub struct Dependency {
    pub name: &'static str,
    pub status: &'static str,
    pub required: bool,
    /// The circuit breaker's state, for the dependencies behind one.
    pub breaker: &'static str,
}

/// A parked event's line.
pub struct Parked {
    pub id: i64,
    pub event_type: String,
    pub document_id: String,
    pub attempts: i32,
    pub reason: String,
    pub parked_for: String,
    /// Idempotency keys of this rendering's buttons: a double click sends one key twice.
    pub key_retry: Uuid,
    pub key_skip: Uuid,
}

#[derive(Template)]
#[template(path = "console/operator.html")]
struct Overview {
    flash: Option<String>,
    ready: &'static str,
    dependencies: Vec<Dependency>,
    stats: OutboxStats,
    oldest_undelivered: String,
    oldest_parked: String,
    parked: Vec<Parked>,
    more_parked: bool,
    checked_at: String,
    charts: Charts,
    /// The replays section (`replays.rs`), rendered.
    replays: String,
    /// The webhooks section (`webhooks.rs`), rendered.
    webhooks: String,
}

fn dependencies(r: &ReadinessView) -> Vec<Dependency> {
    let c = &r.checks;
    vec![
        Dependency {
            name: "PostgreSQL",
            status: c.postgresql.status.as_str(),
            required: c.postgresql.required,
            breaker: "",
        },
        Dependency {
            name: "Redis",
            status: c.redis.status.as_str(),
            required: c.redis.required,
            breaker: c.redis.circuit_breaker.as_str(),
        },
        Dependency {
            name: "MongoDB",
            status: c.mongodb.status.as_str(),
            required: c.mongodb.required,
            breaker: c.mongodb.circuit_breaker.as_str(),
        },
        Dependency {
            name: "RabbitMQ",
            status: c.rabbitmq.status.as_str(),
            required: c.rabbitmq.required,
            breaker: "",
        },
    ]
    .into_iter()
    .chain(required_queues_line(r))
    .collect()
}

/// The required queues' line, when some are configured (`amqp.required_queues`).
fn required_queues_line(r: &ReadinessView) -> Option<Dependency> {
    let c = &r.checks.required_queues;
    (!c.queues.is_empty()).then(|| Dependency {
        name: "Required queues",
        status: c.status.as_str(),
        required: c.required,
        breaker: "",
    })
}

/// GET `/console/f/operator`.
pub async fn overview(
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    render(&state, &caller?, None).await
}

async fn render(
    state: &AppState,
    caller: &Caller,
    flash: Option<String>,
) -> Result<HttpResponse, Shown> {
    caller.require(Role::Admin)?;
    let ready = readiness(state).await;
    let stats = state.outbox_admin.stats().await.map_err(ApiError::from)?;
    let mut found = state
        .outbox_admin
        .list(OutboxFilter::Parked, None, PARKED_ROWS + 1)
        .await
        .map_err(ApiError::from)?;
    let more_parked = found.len() as i64 > PARKED_ROWS;
    found.truncate(PARKED_ROWS as usize);
    let charts = charts::charts(state, &stats, &ready).await?;
    let now = chrono::Utc::now();
    let parked = found
        .into_iter()
        .map(|r| Parked {
            id: r.id,
            event_type: r.event_type,
            document_id: r.document_id.to_string(),
            attempts: r.attempts,
            reason: r.parked_reason.or(r.last_error).unwrap_or_default(),
            parked_for: r.parked_at.map(|t| waited(t, now)).unwrap_or_default(),
            key_retry: Uuid::new_v4(),
            key_skip: Uuid::new_v4(),
        })
        .collect();
    rendered(&Overview {
        flash,
        ready: ready.status.as_str(),
        dependencies: dependencies(&ready),
        oldest_undelivered: duration(stats.oldest_undelivered_age.as_secs() as i64),
        oldest_parked: duration(stats.oldest_parked_age.as_secs() as i64),
        stats,
        parked,
        more_parked,
        checked_at: when(now),
        charts,
        replays: super::replays::section(state, caller, None).await?,
        webhooks: super::webhooks::section(state, caller, None).await?,
    })
}

/// POST `/console/f/outbox/{id}/retry`: the JSON API's retry, under the button's key.
pub async fn retry(
    req: HttpRequest,
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    act(&req, &path, caller, &state, OutboxAction::Retry).await
}

/// POST `/console/f/outbox/{id}/skip`: the JSON API's skip.
pub async fn skip(
    req: HttpRequest,
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    act(&req, &path, caller, &state, OutboxAction::Skip).await
}

#[tracing::instrument(skip_all, fields(outbox_id = %id, action = action.as_str()))]
async fn act(
    req: &HttpRequest,
    id: &str,
    caller: Result<Caller, ApiError>,
    state: &web::Data<AppState>,
    action: OutboxAction,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Admin).map_err(Shown::action)?;
    let (st, id, admin) = (state.clone(), id.to_string(), caller.id.clone());
    let acted = post::run(req, state, &caller, &[], move |held_key| async move {
        let id: i64 = id
            .parse()
            .map_err(|_| ApiError::not_found("no such outbox row"))?;
        let request_id = request_id::current();
        let row = st
            .outbox_admin
            .act(id, action, &admin, &request_id, held_key.as_ref());
        Ok(row.await?)
    })
    .await;
    let row = acted.and_then(Ran::succeeded).map_err(Shown::action)?;
    let flash = match action {
        OutboxAction::Retry => format!("Event {} is back in line.", row.id),
        OutboxAction::Skip => format!("Event {} was skipped: it will never be published.", row.id),
    };
    render(state, &caller, Some(flash)).await
}
