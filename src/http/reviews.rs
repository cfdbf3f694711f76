//! `/api/v1/reviews` handlers.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use super::body::read_json;
use super::error::ApiError;
use super::views::{DocumentView, ReviewPage, TransitionView};
use super::BodyLimit;
use crate::auth::{Caller, Role};
use crate::domain::{Comment, RejectReason, ReviewStatus};
use crate::review::{Decision, TransitionError};
use crate::startup::AppState;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    comment: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    reason: String,
}

#[derive(Deserialize)]
pub struct ListQuery {
    status: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

impl From<TransitionError> for ApiError {
    fn from(e: TransitionError) -> Self {
        match e {
            TransitionError::Contended(c) => c.into(),
            TransitionError::Store(s) => s.into(),
        }
    }
}

#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn approve(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let body: ApproveBody = read_json(&req, payload, limit.0, true).await?;
    let comment = body
        .comment
        .as_deref()
        .map(Comment::parse)
        .transpose()
        .map_err(|e| ApiError::validation(e.to_string()))?;
    decide(&req, &state, caller, *path, Decision::Approve(comment)).await
}

#[tracing::instrument(skip_all, fields(review_id = %path))]
pub async fn reject(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let body: RejectBody = read_json(&req, payload, limit.0, false).await?;
    let reason =
        RejectReason::parse(&body.reason).map_err(|e| ApiError::validation(e.to_string()))?;
    decide(&req, &state, caller, *path, Decision::Reject(reason)).await
}

async fn decide(
    req: &HttpRequest,
    state: &AppState,
    caller: Caller,
    review_id: Uuid,
    decision: Decision,
) -> Result<HttpResponse, ApiError> {
    let hooks = state.hooks(req);
    let done = state
        .reviews
        .decide(
            caller.id,
            review_id,
            decision,
            super::request_id::current(),
            hooks,
        )
        .await?;
    Ok(HttpResponse::Ok().json(TransitionView {
        document: DocumentView::from(&done.document),
        review: done.review,
    }))
}

pub async fn list(
    query: web::Query<ListQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Reviewer)?;
    let status = match query.status.as_deref() {
        None => ReviewStatus::Pending,
        Some(s) => ReviewStatus::parse(s).ok_or_else(|| {
            ApiError::validation("status must be one of PENDING, APPROVED, REJECTED")
        })?,
    };
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation("limit must be between 1 and 100"));
    }
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let mut items = state.store.list_reviews(status, after, limit + 1).await?;
    let next_cursor = if items.len() as i64 > limit {
        items.truncate(limit as usize);
        items.last().map(|r| encode_cursor(r.submitted_at, r.id))
    } else {
        None
    };
    Ok(HttpResponse::Ok().json(ReviewPage { items, next_cursor }))
}

fn encode_cursor(at: DateTime<Utc>, id: Uuid) -> String {
    format!("{}.{}", at.timestamp_micros(), id.simple())
}

fn decode_cursor(s: &str) -> Result<(DateTime<Utc>, Uuid), ApiError> {
    let bad = || ApiError::validation("cursor is not one this service issued");
    let (micros, id) = s.split_once('.').ok_or_else(bad)?;
    let micros: i64 = micros.parse().map_err(|_| bad())?;
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
    let id = Uuid::parse_str(id).map_err(|_| bad())?;
    Ok((at, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let at = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let id = Uuid::now_v7();
        assert_eq!(decode_cursor(&encode_cursor(at, id)).unwrap(), (at, id));
        for bad in ["", "x", "1.", ".abc", "1.not-a-uuid", "' OR 1=1 --"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
