//! Running the work of a POST: in its own task (a client that disconnects cannot cancel a
//! transition halfway: it completes, records its result and releases its locks), and under
//! the request's `Idempotency-Key` when it has one. The policy is `usecases::idempotency`;
//! this module reads the header, and answers a fresh result and a repeated one alike.

use std::future::Future;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use super::auth::Caller;
use super::error::{ApiError, ErrorCode};
use super::request_id;
use super::state::AppState;
use crate::store::HeldKey;
use crate::usecases::idempotency::{fingerprint, Begin, IdempotencyKey, Settle};
use crate::usecases::{Recordable, Recorded, SentReply};

pub const HEADER: &str = "idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

fn key_of(req: &HttpRequest) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(v) = req.headers().get(HEADER) else {
        return Ok(None);
    };
    let s = v
        .to_str()
        .map_err(|_| ApiError::validation("Idempotency-Key must be printable ASCII"))?;
    IdempotencyKey::parse(s)
        .map(Some)
        .map_err(|e| ApiError::validation(e.to_string()))
}

/// How a POST's work ended: its result, fresh or recorded under the key by the request that
/// first ran it, or the reply that request was sent.
pub enum Ran<T> {
    Fresh(T),
    /// The result an earlier request with the same key recorded.
    Repeated(T),
    /// The reply an earlier request with the same key was sent: a refusal, or a success
    /// recorded before results were recorded typed.
    Sent(SentReply),
}

impl<T: Recordable> Ran<T> {
    /// The result; a repeated refusal as the error it was, for a front end that shows
    /// errors its own way.
    pub fn succeeded(self) -> Result<T, ApiError> {
        match self {
            Ran::Fresh(t) | Ran::Repeated(t) => Ok(t),
            Ran::Sent(reply) if reply.status < 400 => T::from_record(reply.body)
                .map_err(|e| ApiError::internal(anyhow::anyhow!("a recorded reply: {e}"))),
            Ran::Sent(SentReply { status, body }) => {
                let code = serde_json::from_value::<ErrorCode>(body["code"].clone())
                    .unwrap_or(ErrorCode::Internal);
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::CONFLICT);
                let message = body["message"].as_str().unwrap_or("refused").to_string();
                Err(ApiError::new(status, code, message))
            }
        }
    }
}

/// Runs `work` in its own task, under the request's idempotency key if it has one, and
/// returns how it ran: the JSON API answers it with [`respond`], the console renders it.
///
/// `work` gets the held key (None without a key) and must pass it to the use case: that
/// records a success in the same COMMIT as the change, the only place a success is recorded.
pub async fn run<T, W, Fut>(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    caller: &Caller,
    body: &[u8],
    work: W,
) -> Result<Ran<T>, ApiError>
where
    T: Recordable + Send + 'static,
    W: FnOnce(Option<HeldKey>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, ApiError>> + Send + 'static,
{
    let keyed = key_of(req)?.map(|k| (k, fingerprint(req.method().as_str(), req.path(), body)));
    let (state, owner) = (state.clone(), caller.id.clone());
    let runtime = state.runtime.clone();
    let task = async move {
        let Some((key, fp)) = keyed else {
            return work(None).await.map(Ran::Fresh);
        };
        match state.idempotency.begin(&owner, &key, &fp).await? {
            Begin::Repeat(Recorded::Succeeded(record)) => T::from_record(record)
                .map(Ran::Repeated)
                .map_err(|e| ApiError::internal(anyhow::anyhow!("a recorded result: {e}"))),
            Begin::Repeat(Recorded::Sent(reply)) => Ok(Ran::Sent(reply)),
            Begin::Mismatch => Err(ApiError::key_reused()),
            Begin::InFlight => Err(ApiError::in_flight(
                "a request with this Idempotency-Key is still running; retry shortly",
            )),
            Begin::Proceed(held) => {
                let ran = work(Some(held.clone())).await;
                let ending = match &ran {
                    Ok(_) => Settle::Committed,
                    Err(e) if e.is_retryable() => Settle::Retryable,
                    Err(e) => Settle::Refused(e.sent()),
                };
                state.idempotency.settle(&held, ending).await;
                ran.map(Ran::Fresh)
            }
        }
    };
    let task = runtime.spawn(tracing::Instrument::instrument(
        request_id::scope(request_id::current(), crate::store::scope::carry(task)),
        tracing::Span::current(),
    ));
    task.await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("request task failed: {e}")))?
}

/// The JSON response of a POST: `status` and `view` of its result, fresh or repeated (the
/// same bytes either way), or the reply an earlier request was sent.
pub fn respond<T, V: Serialize>(
    ran: Ran<T>,
    status: StatusCode,
    view: impl FnOnce(&T) -> V,
) -> HttpResponse {
    respond_tagged(ran, status, view, |_| None)
}

/// As [`respond`], for a result that carries one document: with its `ETag` (its version).
pub fn respond_document<T, V: Serialize>(
    ran: Ran<T>,
    status: StatusCode,
    view: impl FnOnce(&T) -> V,
    version: impl FnOnce(&T) -> i64,
) -> HttpResponse {
    respond_tagged(ran, status, view, |t| Some(version(t)))
}

fn respond_tagged<T, V: Serialize>(
    ran: Ran<T>,
    status: StatusCode,
    view: impl FnOnce(&T) -> V,
    version: impl FnOnce(&T) -> Option<i64>,
) -> HttpResponse {
    let (t, repeated) = match ran {
        Ran::Fresh(t) => (t, false),
        Ran::Repeated(t) => (t, true),
        Ran::Sent(reply) => {
            let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
            return HttpResponse::build(status)
                .insert_header((REPLAYED_HEADER, "true"))
                .json(reply.body);
        }
    };
    let mut res = HttpResponse::build(status);
    if repeated {
        res.insert_header((REPLAYED_HEADER, "true"));
    }
    if let Some(v) = version(&t) {
        res.insert_header((actix_web::http::header::ETAG, super::preconditions::etag(v)));
    }
    res.json(view(&t))
}
