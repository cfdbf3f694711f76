//! Request ids and HTTP metrics. Ids are taken from `X-Request-Id` when it is sane, generated otherwise, echoed back,
//! put in the root span of every log line and in every error body.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static CURRENT: String;
}

/// The id of the request this task serves ("unknown" outside a request).
pub fn current() -> String {
    CURRENT
        .try_with(|id| id.clone())
        .unwrap_or_else(|_| "unknown".to_string())
}

fn sane(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| s.to_string())
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
    let method = req.method().to_string();
    let metrics = req
        .app_data::<actix_web::web::Data<crate::startup::AppState>>()
        .map(|s| s.metrics.clone());
    let result = CURRENT
        .scope(id.clone(), next.call(req))
        .instrument(span.clone())
        .await;
    let mut res = result?;
    let status = res.status().as_u16();
    span.record("status", status);
    if let Some(m) = metrics {
        let route = res
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".into());
        m.observe_http(&method, &route, status, started.elapsed());
    }
    span.in_scope(|| {
        tracing::info!(
            status,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request finished"
        )
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(HeaderName::from_static(HEADER), v);
    }
    Ok(res)
}

/// Runs `fut` with `id` as the current request id (for work moved to another task).
pub async fn scope<F: std::future::Future>(id: String, fut: F) -> F::Output {
    CURRENT.scope(id, fut).await
}
