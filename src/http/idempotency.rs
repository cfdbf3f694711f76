//! `Idempotency-Key` on POSTs, and running the work of a POST in its own task.
//!
//! With a key, the first request runs and its response is stored; a retry with the same key
//! and the same request gets that response replayed (`Idempotent-Replayed: true`), with
//! another request 422 `IDEMPOTENCY_KEY_REUSED`, and while the first still runs 409
//! `IDEMPOTENCY_IN_FLIGHT`. Keys are scoped to the caller. Retryable failures (lock
//! contention, lost lease, a dependency down) are not stored: a retry runs again.
//!
//! The work runs in a spawned task so that a client that disconnects cannot cancel it
//! halfway: it completes, stores its response, and releases its locks.

use std::future::Future;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::{ApiError, ErrorCode};
use super::request_id;
use crate::auth::Caller;
use crate::startup::AppState;
use crate::store::idempotency::{self as repo, Begin, Receipt};

pub const HEADER: &str = "idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// What a POST handler's work returns: a status and a JSON body.
pub type Reply = Result<(StatusCode, Value), ApiError>;

fn key_of(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(v) = req.headers().get(HEADER) else {
        return Ok(None);
    };
    let s = v
        .to_str()
        .map_err(|_| ApiError::validation("Idempotency-Key must be printable ASCII"))?;
    if s.is_empty() || s.len() > 255 || !s.chars().all(|c| c.is_ascii_graphic()) {
        return Err(ApiError::validation(
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
        ));
    }
    Ok(Some(s.to_string()))
}

/// Method, path and body; JSON bodies are canonicalised so key order does not matter.
pub fn fingerprint(req: &HttpRequest, body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok())
        .unwrap_or_else(|| body.to_vec());
    let mut h = Sha256::new();
    h.update(req.method().as_str());
    h.update(b"\n");
    h.update(req.path());
    h.update(b"\n");
    h.update(&canonical);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn respond(reply: Reply) -> Result<HttpResponse, ApiError> {
    let (status, body) = reply?;
    Ok(HttpResponse::build(status).json(body))
}

/// Runs `work` in its own task, under the request's idempotency key if it has one.
///
/// `work` gets the key's [`Receipt`] (None without a key) and must pass it to the store:
/// that writes a success response in the same COMMIT as the change (so a retry after a lost
/// reply replays it), and is the only place a success is recorded.
pub async fn execute<W, Fut>(
    req: &HttpRequest,
    state: &actix_web::web::Data<AppState>,
    caller: &Caller,
    body: &[u8],
    work: W,
) -> Result<HttpResponse, ApiError>
where
    W: FnOnce(Option<Receipt>) -> Fut + Send + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    let key = key_of(req)?;
    let rid = request_id::current();
    let span = tracing::Span::current();
    let Some(key) = key else {
        let task = tokio::spawn(tracing::Instrument::instrument(
            request_id::scope(rid, work(None)),
            span,
        ));
        return respond(
            task.await
                .map_err(|e| ApiError::internal(anyhow::anyhow!("request task failed: {e}")))?,
        );
    };
    let fp = fingerprint(req, body);
    let owner = caller.id.as_str().to_string();
    let state = state.clone();
    let task = tokio::spawn(tracing::Instrument::instrument(
        request_id::scope(rid, async move {
            let pool = state.store.pool();
            let begun = repo::begin(
                pool,
                &owner,
                &key,
                &fp,
                state.idempotency.in_flight_for,
                state.idempotency.ttl,
            )
            .await
            .map_err(ApiError::from)?;
            match begun {
                Begin::Replay { status, body } => Ok(Outcome::Replay(status, body)),
                Begin::Mismatch => Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    ErrorCode::IdempotencyKeyReused,
                    "this Idempotency-Key was already used with a different request",
                )),
                Begin::InFlight => {
                    let mut e = ApiError::new(
                        StatusCode::CONFLICT,
                        ErrorCode::IdempotencyInFlight,
                        "a request with this Idempotency-Key is still running; retry shortly",
                    );
                    e.retry_after_secs = Some(1);
                    Err(e)
                }
                Begin::Proceed(claim) => {
                    let receipt = Receipt {
                        owner: owner.clone(),
                        key: key.clone(),
                        claim,
                    };
                    let reply = work(Some(receipt)).await;
                    let saved = match &reply {
                        // A success is recorded by the work itself, in its change's transaction.
                        Ok(_) => Ok(()),
                        Err(e) if !e.is_retryable() => {
                            let body = e.body_json();
                            repo::finish(pool, &owner, &key, claim, e.status.as_u16(), &body).await
                        }
                        Err(_) => repo::abandon(pool, &owner, &key, claim).await,
                    };
                    if let Err(e) = saved {
                        // The work is done; the key will be taken over after in_flight_for.
                        tracing::error!(error = %e, "could not record the idempotency outcome");
                    }
                    reply.map(|(s, b)| Outcome::Fresh(s, b))
                }
            }
        }),
        span,
    ));
    match task
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("request task failed: {e}")))??
    {
        Outcome::Fresh(status, body) => Ok(HttpResponse::build(status).json(body)),
        Outcome::Replay(status, body) => Ok(HttpResponse::build(
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        )
        .insert_header((REPLAYED_HEADER, "true"))
        .json(body)),
    }
}

enum Outcome {
    Fresh(StatusCode, Value),
    Replay(u16, Value),
}
