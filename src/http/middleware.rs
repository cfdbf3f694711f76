//! The middleware every request passes: its request id (from `X-Request-Id` or generated,
//! echoed back, in the root span of every log line and in every error body), and its HTTP
//! metrics.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

use super::request_id::{sane, CURRENT, HEADER};
use super::state::AppState;

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
    let state = req.app_data::<actix_web::web::Data<AppState>>().cloned();
    let result = CURRENT
        .scope(id.clone(), next.call(req))
        .instrument(span.clone())
        .await;
    let mut res = result?;
    let status = res.status().as_u16();
    span.record("status", status);
    if let Some(m) = state.as_ref().map(|s| &s.metrics) {
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
