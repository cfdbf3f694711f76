//! The one error envelope: `{"code", "message", "request_id"}`. Codes are for programs and
//! stable; messages are for people. A 500 says little to the client and everything to the
//! log. Nothing here may carry SQL, a stack trace or a secret to the client.
//!
//! Here the errors of the layers below (refusals of the rules, lock contention, store
//! failures) become HTTP statuses and codes; the errors of one service alone (a replay's, an
//! audit's, a policy's) are mapped by that service's handlers, into the same envelope.

use std::fmt;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use super::request_id;
use crate::domain::Refusal;
use crate::lock::gate::LockBusy;
use crate::store::StoreError;
use crate::usecases::{self, AdminError, SentReply};

/// Stable error codes: programs branch on these, never on messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    LockNotAcquired,
    InvalidState,
    LockLost,
    NotFound,
    ValidationFailed,
    Unauthorized,
    Forbidden,
    SelfReviewForbidden,
    IdempotencyKeyReused,
    IdempotencyInFlight,
    DependencyUnavailable,
    Internal,
    MethodNotAllowed,
    RequestTimeout,
    AlreadyVoted,
    ReviewClaimed,
    NotEligible,
    /// A replay to the same target queue is running (on any instance).
    ReplayRunning,
    /// A replay's target queue is not one `replay.allowed_target_queues` allows.
    ReplayTargetNotAllowed,
    /// What a create names exists already (a space's key).
    AlreadyExists,
    /// 412: the `If-Match` of a write names a version the document is no longer at.
    VersionMismatch,
    /// 428: `http.require_if_match` is on and a write came without `If-Match`.
    PreconditionRequired,
    /// 409 (with `Retry-After`): another person holds a live edit lease on the document.
    DocumentLeased,
    /// 409: the edit's `Lease-Token` names a lease that expired or was broken.
    LeaseLost,
}

/// The body of every error response.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorEnvelope {
    pub code: ErrorCode,
    pub message: String,
    /// The X-Request-Id of the request, for finding it in the logs.
    pub request_id: String,
}

pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub retry_after_secs: Option<u64>,
    /// Logged where the error is turned into a response; never sent.
    pub cause: Option<anyhow::Error>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: ErrorCode,
    message: &'a str,
    request_id: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after_secs: None,
            cause: None,
        }
    }
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::ValidationFailed,
            message,
        )
    }
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationFailed,
            message,
        )
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
    }
    /// A 503 naming the `dependency` that is down (never its address or its error).
    pub fn unavailable(dependency: &str, cause: anyhow::Error) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::DependencyUnavailable,
            format!("{dependency} is unavailable; try again shortly"),
        );
        e.retry_after_secs = Some(2);
        e.cause = Some(cause);
        e
    }
    /// 408 `REQUEST_TIMEOUT`: the body did not all arrive within `timeout`.
    pub fn body_timeout(timeout: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::RequestTimeout,
            format!(
                "the request body did not arrive within {} ms",
                timeout.as_millis()
            ),
        )
    }
    pub fn internal(cause: anyhow::Error) -> Self {
        let mut e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "an internal error occurred",
        );
        e.cause = Some(cause);
        e
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({}): {}", self.code, self.status, self.message)?;
        if let Some(c) = &self.cause {
            write!(f, "\ncaused by: {c:?}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl ApiError {
    /// The envelope as JSON, with the current request id.
    pub fn body_json(&self) -> serde_json::Value {
        serde_json::to_value(Body {
            code: self.code,
            message: &self.message,
            request_id: request_id::current(),
        })
        .expect("the envelope serializes")
    }

    /// Whether a retry of the same request may succeed (so its result must not be replayed).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.code,
            ErrorCode::LockNotAcquired
                | ErrorCode::LockLost
                | ErrorCode::DependencyUnavailable
                | ErrorCode::Internal
                | ErrorCode::IdempotencyInFlight
                | ErrorCode::RequestTimeout
                | ErrorCode::ReviewClaimed
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let request_id = request_id::current();
        if self.status.is_server_error() {
            tracing::error!(code = ?self.code, error = ?self, "request failed");
        } else {
            tracing::info!(code = ?self.code, status = self.status.as_u16(), message = %self.message, "request refused");
        }
        let mut res = HttpResponse::build(self.status);
        // The rest of a body that came too slowly, or too large, is not read: the connection
        // cannot carry another request, so it is closed (actix then drops what still comes,
        // for `server.client_disconnect_timeout_ms` at most).
        if matches!(
            self.status,
            StatusCode::REQUEST_TIMEOUT | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            res.force_close();
        }
        if let Some(secs) = self.retry_after_secs {
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        res.json(Body {
            code: self.code,
            message: &self.message,
            request_id,
        })
    }
}

impl ApiError {
    fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 409 `LOCK_NOT_ACQUIRED`: another request holds the item; retry after `secs`.
    fn busy(secs: u64) -> Self {
        Self::conflict(
            ErrorCode::LockNotAcquired,
            "another request is working on this item; retry shortly",
        )
        .retry_after(secs)
    }

    /// This error with `Retry-After: secs`.
    fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    fn lock_lost() -> Self {
        Self::conflict(
            ErrorCode::LockLost,
            "the lock was lost before the change could be committed; nothing was changed, retry",
        )
    }

    /// 409 `IDEMPOTENCY_IN_FLIGHT` with `Retry-After: 1`.
    pub fn in_flight(message: &str) -> Self {
        Self::conflict(ErrorCode::IdempotencyInFlight, message).retry_after(1)
    }

    /// 422 `IDEMPOTENCY_KEY_REUSED`.
    pub fn key_reused() -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was already used with a different request",
        )
    }

    /// The reply an idempotency key replays for this error, as it is sent.
    pub fn sent(&self) -> SentReply {
        SentReply {
            status: self.status.as_u16(),
            body: self.body_json(),
        }
    }
}

/// The 405 of a path that allows only `allow` (an `Allow` header value), with that header.
pub fn method_not_allowed(allow: &str) -> HttpResponse {
    let mut res = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::MethodNotAllowed,
        format!("this path allows only {allow}"),
    )
    .error_response();
    if let Ok(v) = header::HeaderValue::from_str(allow) {
        res.headers_mut().insert(header::ALLOW, v);
    }
    res
}

impl From<LockBusy> for ApiError {
    fn from(c: LockBusy) -> Self {
        ApiError::busy(c.retry_after.as_secs_f64().ceil().max(1.0) as u64)
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        let undecidable = |what: &str| {
            ApiError::conflict(
                ErrorCode::InvalidState,
                format!("the review can no longer be decided: it is {what}"),
            )
        };
        match r {
            Refusal::NotFound => ApiError::not_found("no such document or review"),
            Refusal::Forbidden(msg) => ApiError::forbidden(msg),
            Refusal::SelfReview => ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::SelfReviewForbidden,
                "the author of a document, or anyone who edited the version under review, may not approve or reject it",
            ),
            Refusal::InvalidState(t) => ApiError::conflict(ErrorCode::InvalidState, t.to_string()),
            Refusal::ReviewNotPending(s) => undecidable(s.as_str()),
            Refusal::NotCurrentReview => undecidable("not the current review"),
            Refusal::AlreadyPending => undecidable("pending for this document"),
            Refusal::StaleFence => ApiError::lock_lost(),
            Refusal::AlreadyVoted => ApiError::conflict(
                ErrorCode::AlreadyVoted,
                "you already voted on this review; a person votes once per review",
            ),
            e @ Refusal::NotEligible { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::NotEligible, e.to_string())
            }
            e @ Refusal::ReviewClaimed {
                retry_after_secs, ..
            } => ApiError::conflict(ErrorCode::ReviewClaimed, e.to_string()).retry_after(retry_after_secs),
            e @ Refusal::UnknownPolicy(_) => ApiError::validation(format!("policy: {e}")),
            e @ Refusal::NoClaim(_) => ApiError::not_found(e.to_string()),
            e @ Refusal::VersionNotHeld { .. } => ApiError::not_found(e.to_string()),
            e @ Refusal::DocumentLeased {
                retry_after_secs, ..
            } => ApiError::conflict(ErrorCode::DocumentLeased, e.to_string()).retry_after(retry_after_secs),
            e @ Refusal::NoLease => ApiError::not_found(e.to_string()),
            e @ Refusal::LeaseLost => ApiError::conflict(ErrorCode::LeaseLost, e.to_string()),
            e @ (Refusal::VersionMoved { .. } | Refusal::Reverifying { .. }) => {
                ApiError::conflict(ErrorCode::InvalidState, e.to_string())
            }
            e @ Refusal::VersionMismatch { .. } => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                ErrorCode::VersionMismatch,
                e.to_string(),
            ),
            e @ Refusal::ReviewOfAnotherDocument(_) => {
                ApiError::validation(format!("review_id: {e}"))
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::RowLocked => ApiError::busy(1),
            StoreError::Unavailable(db) => ApiError::unavailable(
                "PostgreSQL",
                anyhow::Error::new(db).context("postgresql unavailable"),
            ),
            StoreError::ReadOnly(db) => ApiError::unavailable(
                "PostgreSQL",
                anyhow::Error::new(db).context("postgresql session is read-only"),
            ),
            StoreError::TimedOut(d) => ApiError::unavailable(
                "PostgreSQL",
                anyhow::anyhow!("postgresql did not answer within {d:?}"),
            ),
            StoreError::Unexpected(cause) => ApiError::internal(cause),
        }
    }
}

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::NotFound(_) => ApiError::not_found(e.to_string()),
            AdminError::NotParked(..) => ApiError::conflict(ErrorCode::InvalidState, e.to_string()),
            AdminError::KeyTakenOver => ApiError::in_flight(
                "a retry with this Idempotency-Key took over; retry to get its result",
            ),
            AdminError::Store(s) => s.into(),
        }
    }
}

impl From<usecases::Error> for ApiError {
    fn from(e: usecases::Error) -> Self {
        match e {
            usecases::Error::Refused(r) => r.into(),
            usecases::Error::LockBusy(c) => c.into(),
            usecases::Error::LockLost => ApiError::lock_lost(),
            usecases::Error::KeyTakenOver => ApiError::in_flight(
                "a retry with this Idempotency-Key took over; retry to get its result",
            ),
            usecases::Error::Store(s) => s.into(),
            usecases::Error::Locks(e) => ApiError::unavailable(
                "PostgreSQL",
                anyhow::anyhow!("the database lock provider failed: {e}"),
            ),
        }
    }
}
