//! `/healthz` (the process answers) and `/readyz` (PostgreSQL required; Redis, MongoDB and
//! RabbitMQ reported one by one; an optional one down means degraded, not unready).

use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::metrics::Snapshot;
use crate::startup::AppState;

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

async fn probe<F, E>(fut: F) -> (&'static str, Option<String>)
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    match tokio::time::timeout(Duration::from_secs(2), fut).await {
        Ok(Ok(())) => ("up", None),
        Ok(Err(e)) => ("down", Some(e.to_string())),
        Err(_) => ("down", Some("timed out".into())),
    }
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
    let (pg, redis, mongo, amqp) = tokio::join!(
        probe(state.store.ping()),
        probe(state.redis.ping()),
        probe(state.mongo.ping()),
        probe(state.dispatcher.publisher().ping()),
    );
    let optional_down = [redis.0, mongo.0, amqp.0].contains(&"down");
    let status = if pg.0 != "up" {
        "not_ready"
    } else if optional_down {
        "degraded"
    } else {
        "ready"
    };
    // Failure reasons of dependencies are kept to the log: they can name hosts.
    for (name, (s, why)) in [
        ("postgresql", &pg),
        ("redis", &redis),
        ("mongodb", &mongo),
        ("rabbitmq", &amqp),
    ] {
        if let Some(why) = why {
            tracing::warn!(dependency = name, state = s, reason = %why, "readiness probe");
        }
    }
    let body = json!({
        "status": status,
        "checks": {
            "postgresql": { "status": pg.0, "required": true },
            "redis": { "status": redis.0, "required": false,
                       "circuit_breaker": state.reviews.gate().breaker_state().as_str() },
            "mongodb": { "status": mongo.0, "required": false },
            "rabbitmq": { "status": amqp.0, "required": false },
        }
    });
    if pg.0 == "up" {
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
    let backlog = tokio::time::timeout(
        Duration::from_secs(1),
        crate::store::outbox::backlog(state.store.pool()),
    )
    .await
    .ok()
    .and_then(|r| r.ok());
    let gate = state.reviews.gate();
    let text = state.metrics.render(&Snapshot {
        locks: gate.stats(),
        breaker: gate.breaker_state(),
        dispatch: state.dispatcher.stats(),
        backlog,
    });
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text)
}
