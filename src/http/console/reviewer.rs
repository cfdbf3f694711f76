//! The reviewer's pages: the queue of pending reviews, oldest first, and the decisions.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::document;
use super::render::{form, rendered, waited, when, Shown};
use crate::http::auth::{Caller, Role};
use crate::http::error::{ApiError, ErrorCode};
use crate::http::post::Ran;
use crate::http::reviews::{self, ReviewQuery};
use crate::http::state::AppState;

/// A pending review as the queue shows it.
pub struct QueueRow {
    pub document_id: Uuid,
    pub title: String,
    pub submitted_by: String,
    pub submitted_at: String,
    pub waited: String,
}

#[derive(Template)]
#[template(path = "console/queue.html")]
struct Queue {
    rows: Vec<QueueRow>,
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
pub struct QueueQuery {
    cursor: Option<String>,
}

/// GET `/console/f/queue`: pending reviews in the order they were submitted.
pub async fn queue(
    query: web::Query<QueueQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let list = ReviewQuery {
        status: None,
        limit: Some(50),
        cursor: query.into_inner().cursor,
        ..ReviewQuery::default()
    };
    let found = reviews::review_page(&state, &caller, &list).await?;
    let now = Utc::now();
    let rows = found
        .items
        .into_iter()
        .map(|r| QueueRow {
            document_id: r.document_id,
            title: r.document_title.unwrap_or_default(),
            submitted_by: r.submitted_by,
            submitted_at: when(r.submitted_at),
            waited: waited(r.submitted_at, now),
        })
        .collect();
    rendered(&Queue {
        rows,
        next_cursor: found.next_cursor,
    })
}

#[derive(Deserialize)]
pub struct ApproveForm {
    #[serde(default)]
    comment: String,
}

#[derive(Deserialize)]
pub struct RejectForm {
    #[serde(default)]
    reason: String,
}

/// POST `/console/f/documents/{id}/reviews/{review}/approve`: the JSON API's approve.
pub async fn approve(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Reviewer).map_err(Shown::action)?;
    let comment = form::<ApproveForm>(&req, payload, &state).await?.comment;
    let json = match comment.is_empty() {
        true => json!({}),
        false => json!({ "comment": comment }),
    };
    let verb = "Approved";
    send_decision(req, &path, (json, verb), reviews::approval, caller, state).await
}

/// POST `/console/f/documents/{id}/reviews/{review}/reject`: the JSON API's reject. The
/// page refuses an empty reason before sending; the rules refuse it here too.
pub async fn reject(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Reviewer).map_err(Shown::action)?;
    let reason = form::<RejectForm>(&req, payload, &state).await?.reason;
    let json = json!({ "reason": reason });
    let verb = "Rejected";
    send_decision(req, &path, (json, verb), reviews::rejection, caller, state).await
}

async fn send_decision(
    req: HttpRequest,
    (doc, review): &(String, String),
    (json, verb): (serde_json::Value, &str),
    parse: fn(&[u8]) -> Result<crate::domain::Decision, ApiError>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let (doc, review) = (super::parse_id(doc)?, super::parse_id(review)?);
    let bytes = serde_json::to_vec(&json).expect("a JSON value serializes");
    let decided = reviews::decision(&req, &state, caller.clone(), review, bytes, parse).await;
    match decided.and_then(Ran::succeeded) {
        Ok(done) => {
            let status = done.document.status.as_str();
            let flash = format!("{verb}: the document is now {status}.");
            document::render(&state, &caller, doc, Some(flash)).await
        }
        Err(e) => Err(explain(&state, doc, review, e).await),
    }
}

/// The refusal of a decision, with who decided the review when that is why.
async fn explain(state: &AppState, doc: Uuid, review: Uuid, e: ApiError) -> Shown {
    let mut shown = Shown::action(e);
    if shown.error.code != ErrorCode::InvalidState {
        return shown;
    }
    let history = state.documents.history(doc).await.unwrap_or_default();
    if let Some(r) = history.iter().find(|r| r.id == review) {
        if let Some(by) = &r.decided_by {
            let status = r.status.as_str().to_lowercase();
            shown.message = Some(format!("Already decided by {by} ({status})."));
        }
    }
    shown
}
