//! The middleware every request passes: its request id (from `X-Request-Id` or generated,
//! echoed back, in the root span of every log line and in every error body), the
//! `X-Content-Type-Options: nosniff` of every response (JSON, errors, health and metrics as
//! well as the pages, which also set their own security headers: `csp.rs`), `Connection:
//! close` on every answer of an instance that is draining (`startup::shutdown`), and its HTTP
//! metrics, whose labels come from a fixed set whatever the client sends (a label value
//! made from a request would add a series per value, never freed): the routes of the JSON
//! API (`http::ROUTES`, `http::PAGE_PATHS`) and of the console (`console::PATHS`), which is
//! why it belongs to the wiring, the one place that sees both.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::ConnectionType;
use actix_web::http::Method;
use actix_web::middleware::Next;
use tracing::Instrument;

use crate::console::PATHS as CONSOLE_PATHS;
use crate::http::{PAGE_PATHS, ROUTES};
use crate::web::request_id::{sane, CURRENT, HEADER};
use crate::web::state::AppState;

/// The method's metrics label: a standard method, or `other`.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 7] = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ];
    KNOWN
        .iter()
        .find(|m| *m == method)
        .map_or("other", Method::as_str)
}

/// The route's metrics label: the pattern of a served route (`/api/v1/documents/{id}`) or
/// page (`/assets/{dir}/{file}`, `/console/queue`), or `other` for a path that matches none.
fn route_label(pattern: Option<&str>) -> &'static str {
    let pattern = match pattern {
        Some(p) => p,
        None => return "other",
    };
    let routes = ROUTES.iter().chain(CONSOLE_PATHS).map(|(_, route)| route);
    routes
        .chain(PAGE_PATHS)
        .find(|route| **route == pattern)
        .map_or("other", |route| route)
}

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = req
        .headers()
        .get(HEADER)
        .and_then(sane)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let span = tracing::info_span!(
        "http",
        request_id = %id,
        method = %req.method(),
        path = %req.path(),
        status = tracing::field::Empty,
    );
    let started = Instant::now();
    let method = method_label(req.method());
    let state = req.app_data::<actix_web::web::Data<AppState>>().cloned();
    // The request declares no space to the database until its caller is known
    // (`store::scope`; the `Caller` extractor grants the caller's).
    let result = CURRENT
        .scope(id.clone(), crate::store::scope::serve(next.call(req)))
        .instrument(span.clone())
        .await;
    let mut res = result?;
    let status = res.status().as_u16();
    span.record("status", status);
    if let Some(m) = state.as_ref().map(|s| &s.metrics) {
        let route = route_label(res.request().match_pattern().as_deref());
        m.observe_http(method, route, status, started.elapsed());
    }
    span.in_scope(|| {
        tracing::info!(
            status,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request finished"
        )
    });
    if state.as_ref().is_some_and(|s| s.probes.draining()) {
        // Going away: the client's connection is closed after this answer, so its next
        // request opens a new one, which the load balancer sends to another instance.
        res.response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(HeaderName::from_static(HEADER), v);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_a_fixed_set() {
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let made_up = Method::from_bytes(b"FOO1").unwrap();
        assert_eq!(method_label(&made_up), "other");
        assert_eq!(
            route_label(Some("/api/v1/documents/{id}")),
            "/api/v1/documents/{id}"
        );
        assert_eq!(
            route_label(Some("/assets/{dir}/{file}")),
            "/assets/{dir}/{file}"
        );
        assert_eq!(route_label(Some("/api/v1/{anything}")), "other");
        assert_eq!(route_label(None), "other");
    }
}
