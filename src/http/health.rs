//! `/healthz` (the process answers) and `/readyz` (PostgreSQL required; Redis, MongoDB,
//! RabbitMQ and the required queues reported one by one; an optional one down means
//! degraded, not unready).

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

pub use crate::web::readiness::ReadinessView;
use crate::web::readiness::{readiness, ReadyState};
use crate::web::state::AppState;

/// The answer of `/healthz`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always "ok".
    #[schema(pattern = "^ok$")]
    status: &'static str,
}

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    summary = "The process is alive",
    responses(
        (status = 200, description = "alive", body = Health)
    )
)]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    summary = "Readiness: PostgreSQL required; Redis, MongoDB, RabbitMQ reported",
    responses(
        (status = 200, description = "ready or degraded", body = ReadinessView),
        (status = 503, description = "not_ready: PostgreSQL unreachable; draining: the instance is shutting down", body = ReadinessView)
    )
)]
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let body = readiness(&state).await;
    if matches!(body.status, ReadyState::NotReady | ReadyState::Draining) {
        HttpResponse::ServiceUnavailable().json(body)
    } else {
        HttpResponse::Ok().json(body)
    }
}
/// Prometheus text exposition of every metric.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    summary = "Prometheus metrics",
    responses(
        (status = 200, description = "text exposition format", content_type = "text/plain")
    )
)]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let text = state.metrics.scrape(&state.probes).await;
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text)
}
