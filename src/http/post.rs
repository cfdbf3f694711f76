//! Running the work of a POST: in its own task (a client that disconnects cannot cancel a
//! transition halfway: it completes, records its reply and releases its locks), and under
//! the request's `Idempotency-Key` when it has one. The policy is `usecases::idempotency`;
//! this module only reads the header and writes the reply.

use std::future::Future;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::auth::Caller;
use super::error::{ApiError, ErrorCode};
use super::request_id;
use super::state::AppState;
use crate::store::HeldKey;
use crate::usecases::idempotency::{fingerprint, Begin, IdempotencyKey, Settle};
use crate::usecases::Reply;

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

enum Outcome {
    Fresh(Reply),
    Replay(Reply),
}

/// A POST's reply, and whether it is a replay of an earlier one under the same key.
pub struct Replied {
    pub reply: Reply,
    pub replayed: bool,
}

impl Replied {
    /// The reply of a success; a replayed refusal (recorded under the key) as the error it
    /// was, for a front end that shows errors its own way.
    pub fn succeeded(self) -> Result<Reply, ApiError> {
        if self.reply.status < 400 {
            return Ok(self.reply);
        }
        let body = &self.reply.body;
        let code = serde_json::from_value::<ErrorCode>(body["code"].clone())
            .unwrap_or(ErrorCode::Internal);
        let status = StatusCode::from_u16(self.reply.status).unwrap_or(StatusCode::CONFLICT);
        let message = body["message"].as_str().unwrap_or("refused").to_string();
        Err(ApiError::new(status, code, message))
    }
}

/// Runs `work` in its own task, under the request's idempotency key if it has one, and
/// returns its reply: the JSON API writes it with [`respond`], the console renders it.
///
/// `work` gets the held key (None without a key) and must pass it to the use case: that
/// records a success in the same COMMIT as the change, the only place a success is recorded.
pub async fn run_reply<W, Fut>(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    caller: &Caller,
    body: &[u8],
    work: W,
) -> Result<Replied, ApiError>
where
    W: FnOnce(Option<HeldKey>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Reply, ApiError>> + Send + 'static,
{
    let keyed = key_of(req)?.map(|k| (k, fingerprint(req.method().as_str(), req.path(), body)));
    let (state, owner) = (state.clone(), caller.id.clone());
    let runtime = state.runtime.clone();
    let task = async move {
        let Some((key, fp)) = keyed else {
            return work(None).await.map(Outcome::Fresh);
        };
        match state.idempotency.begin(&owner, &key, &fp).await? {
            Begin::Replay(reply) => Ok(Outcome::Replay(reply)),
            Begin::Mismatch => Err(ApiError::key_reused()),
            Begin::InFlight => Err(ApiError::in_flight(
                "a request with this Idempotency-Key is still running; retry shortly",
            )),
            Begin::Proceed(held) => {
                let reply = work(Some(held.clone())).await;
                let outcome = match &reply {
                    Ok(_) => Settle::Committed,
                    Err(e) if e.is_retryable() => Settle::Retryable,
                    Err(e) => Settle::Refused(e.reply()),
                };
                state.idempotency.settle(&held, outcome).await;
                reply.map(Outcome::Fresh)
            }
        }
    };
    let task = runtime.spawn(tracing::Instrument::instrument(
        request_id::scope(request_id::current(), task),
        tracing::Span::current(),
    ));
    let outcome = task
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("request task failed: {e}")))??;
    Ok(match outcome {
        Outcome::Fresh(reply) => Replied {
            reply,
            replayed: false,
        },
        Outcome::Replay(reply) => Replied {
            reply,
            replayed: true,
        },
    })
}

/// The JSON response of a reply.
pub fn respond(Replied { reply, replayed }: Replied) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    let mut res = HttpResponse::build(status);
    if replayed {
        res.insert_header((REPLAYED_HEADER, "true"));
    }
    res.json(reply.body)
}
