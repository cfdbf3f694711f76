//! `/healthz` (the process answers) and `/readyz` (PostgreSQL required; Redis, MongoDB and
//! RabbitMQ reported one by one; an optional one down means degraded, not unready).

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::state::AppState;

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    summary = "The process is alive",
    responses(
        (status = 200, description = "alive")
    )
)]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    summary = "Readiness: PostgreSQL required; Redis, MongoDB, RabbitMQ reported",
    responses(
        (status = 200, description = "ready or degraded"), (status = 503, description = "PostgreSQL unreachable")
    )
)]
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let r = state.probes.readiness().await;
    let optional_down = !(r.redis.up && r.mongodb.up && r.rabbitmq.up);
    let status = if !r.postgresql.up {
        "not_ready"
    } else if optional_down {
        "degraded"
    } else {
        "ready"
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
    let body = json!({
        "status": status,
        "checks": {
            "postgresql": { "status": r.postgresql.status(), "required": true },
            "redis": { "status": r.redis.status(), "required": false,
                       "circuit_breaker": r.breaker.as_str() },
            "mongodb": { "status": r.mongodb.status(), "required": false,
                         "circuit_breaker": r.mongo_breaker.as_str() },
            "rabbitmq": { "status": r.rabbitmq.status(), "required": false },
        }
    });
    if r.postgresql.up {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
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
