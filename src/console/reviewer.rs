//! The reviewer's pages: the queue of pending reviews, oldest first, with each review's
//! policy, stage, seats and due date; the decisions; claims and giving them back.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use chrono::Utc;
use serde::Deserialize;
use uuid::Uuid;

use super::document;
use super::history::Rounds;
use super::render::{clock, rendered, sent_form, waited, when, Shown};
use super::review::sentence;
use super::spaces;
use crate::domain::{
    Comment, Decision, RejectReason, Review, ReviewKind, ReviewStatus, SpaceRole, Transitioned,
};
use crate::store::{QueueFilter, QueueOrder};
use crate::usecases::Context;
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::post::{self, Ran};
use crate::web::state::AppState;
use crate::web::views::ReviewView;
use crate::web::{paging, queue};

/// A pending review as the queue shows it.
pub struct QueueRow {
    pub document_id: Uuid,
    pub title: String,
    pub submitted_by: String,
    pub submitted_at: String,
    pub waited: String,
    /// "legal v2".
    pub policy: String,
    /// "legal (2 of 2)".
    pub stage: String,
    /// "1 of 2 approvals" in the current stage.
    pub approvals: String,
    /// "2 of 3 seats held: ann, cy".
    pub seats: String,
    pub due: String,
    pub overdue: bool,
    /// A re-verification of a published version (its due date is its deadline).
    pub reverify: bool,
}

#[derive(Template)]
#[template(path = "console/queue.html")]
struct Queue {
    /// The space whose queue this is.
    space: String,
    rows: Vec<QueueRow>,
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
pub struct QueueQuery {
    space: Option<String>,
    cursor: Option<String>,
}

/// Reviews the queue shows at once.
const QUEUE_ROWS: i64 = 50;

/// GET `/console/f/queue?space=K`: the pending reviews of the space, in the order they were
/// submitted (no role there: 404; roles there but not reviewer: 403, as `GET /reviews`).
pub async fn queue(
    query: web::Query<QueueQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    caller.require(Role::Reviewer)?;
    let QueueQuery {
        space,
        cursor: after,
    } = query.into_inner();
    let space = spaces::current(&caller.access, space.as_deref(), Some(SpaceRole::Reviewer))?;
    let filter = QueueFilter {
        status: ReviewStatus::Pending,
        overdue: false,
        eligible: None,
        order: QueueOrder::Queue,
        after: after.as_deref().map(paging::after_review).transpose()?,
        limit: QUEUE_ROWS,
    };
    let found = queue::review_page(&state, &caller.access, Some(&space), filter).await?;
    let now = Utc::now();
    let rows = found.items.into_iter().map(|r| queue_row(r, now)).collect();
    rendered(&Queue {
        space: space.to_string(),
        rows,
        next_cursor: found.next_cursor,
    })
}

fn queue_row(r: ReviewView, now: chrono::DateTime<Utc>) -> QueueRow {
    let current = r.stages.get(r.stage.max(0) as usize);
    let (name, required, approved) = current.map_or(("", 1, 0), |s| {
        (s.name.as_str(), s.required_approvals, s.approvals.len())
    });
    let holders: Vec<&str> = r.claims.iter().map(|c| c.reviewer_id.as_str()).collect();
    let mut seats = format!("{} of {} held", holders.len(), r.seats);
    if !holders.is_empty() {
        seats = format!("{seats}: {}", holders.join(", "));
    }
    QueueRow {
        document_id: r.document_id,
        policy: format!("{} v{}", r.policy, r.policy_version),
        stage: format!("{name} ({} of {})", r.stage + 1, r.stages.len()),
        approvals: format!("{approved} of {required} approvals"),
        seats,
        due: r.due_at.map(when).unwrap_or_default(),
        overdue: r.overdue,
        reverify: r.kind == "reverify",
        title: r.document_title.unwrap_or_default(),
        submitted_by: r.submitted_by,
        submitted_at: when(r.submitted_at),
        waited: waited(r.submitted_at, now),
    }
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
    let (f, bytes) = sent_form::<ApproveForm>(&req, payload, &state).await?;
    let decide = move || {
        let comment = Some(f.comment).filter(|c| !c.is_empty());
        let comment = comment.as_deref().map(Comment::parse).transpose();
        let comment = comment.map_err(|e| ApiError::validation(e.to_string()))?;
        Ok(Decision::Approve(comment))
    };
    let sent = Sent {
        bytes,
        verb: "Approved",
    };
    send_decision(req, &path, sent, decide, caller, state).await
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
    let (f, bytes) = sent_form::<RejectForm>(&req, payload, &state).await?;
    let decide = move || {
        let reason = RejectReason::parse(&f.reason);
        let reason = reason.map_err(|e| ApiError::validation(e.to_string()))?;
        Ok(Decision::Reject(reason))
    };
    let sent = Sent {
        bytes,
        verb: "Rejected",
    };
    send_decision(req, &path, sent, decide, caller, state).await
}

/// A decision's form as sent (its bytes, for the `Idempotency-Key`'s fingerprint), and the
/// verb its outcome reads with.
struct Sent {
    bytes: Vec<u8>,
    verb: &'static str,
}

/// Runs the decision `decide` parses (inside the idempotent work, so a refused form is
/// replayed as such), as the JSON API's vote does.
async fn send_decision(
    req: HttpRequest,
    (doc, review): &(String, String),
    Sent { bytes, verb }: Sent,
    decide: impl FnOnce() -> Result<Decision, ApiError> + Send + 'static,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let (doc, review) = (super::parse_id(doc)?, super::parse_id(review)?);
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let decided = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let decision = decide()?;
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.decide(ctx, review, decision).await?)
    })
    .await;
    match decided.and_then(Ran::succeeded) {
        Ok(done) => {
            let flash = decided_flash(verb, &done);
            document::render(&state, &caller, doc, Some(flash)).await
        }
        Err(e) => Err(explain(&state, &caller, doc, review, e).await),
    }
}

/// What a vote did: the document's new status (a re-verification's outcome), or the stage
/// it completed or counted in.
fn decided_flash(verb: &str, done: &Transitioned) -> String {
    let (d, r) = (&done.document, &done.review);
    match (r.kind, r.status) {
        (_, ReviewStatus::Pending) => {}
        (ReviewKind::Reverify, ReviewStatus::Approved) => {
            let next = d.verify_by.map(|t| format!(", due again {}", when(t)));
            return format!(
                "{verb}: re-verified; it stays published{}.",
                next.unwrap_or_default()
            );
        }
        (ReviewKind::Reverify, _) => {
            let status = d.status.as_str();
            return format!("{verb}: the published version expired; the document is now {status}.");
        }
        (ReviewKind::Publish, _) => {
            return format!("{verb}: the document is now {}.", d.status.as_str());
        }
    }
    let stage = r
        .current_stage()
        .map(|s| (s.name.as_str(), s.required_approvals));
    let (name, required) = stage.unwrap_or(("", 1));
    match r.approvals_in(r.stage) {
        0 => format!("{verb}: the previous stage is complete; the review is now in stage {name}."),
        n => format!("{verb}: {n} of {required} approvals in stage {name}."),
    }
}

/// The refusal of a vote or claim in a sentence built from its code and the review as it
/// is now (who holds the seats, how the caller voted, who votes in the stage, who decided).
async fn explain(state: &AppState, caller: &Caller, doc: Uuid, review: Uuid, e: ApiError) -> Shown {
    let mut shown = Shown::action(e);
    let Ok(mut rounds) = Rounds::first(state, caller.reader(), doc).await else {
        return shown;
    };
    if rounds
        .find(state, caller.reader(), doc, &[review])
        .await
        .is_err()
    {
        return shown;
    }
    if let Some((_, r)) = rounds.get(review) {
        let (code, me) = (shown.error.code, caller.id.as_str());
        shown.message = sentence(code, r, me, Utc::now());
    }
    shown
}

/// POST `/console/f/documents/{id}/reviews/{review}/claim`: the JSON API's claim.
pub async fn claim(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Reviewer).map_err(Shown::action)?;
    let (doc, review) = (super::parse_id(&path.0)?, super::parse_id(&path.1)?);
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let claimed = post::run(&req, &state, &caller, &[], move |held_key| async move {
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.claim(ctx, review).await?)
    })
    .await;
    match claimed.and_then(Ran::succeeded) {
        Ok(r) => {
            let flash = held_until(&r, caller.id.as_str());
            document::render(&state, &caller, doc, Some(flash)).await
        }
        Err(e) => Err(explain(&state, &caller, doc, review, e).await),
    }
}

fn held_until(r: &Review, me: &str) -> String {
    match r.claims.iter().find(|c| c.reviewer_id == me) {
        Some(c) => format!("You hold a seat until {} UTC.", clock(c.expires_at)),
        None => "Claimed.".to_string(),
    }
}

/// POST `/console/f/documents/{id}/reviews/{review}/give-back`: the JSON API's
/// `DELETE /api/v1/reviews/{id}/claim`.
pub async fn give_back(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Reviewer).map_err(Shown::action)?;
    let (doc, review) = (super::parse_id(&path.0)?, super::parse_id(&path.1)?);
    let ctx = state.context(&req, &caller);
    state
        .reviews
        .give_back(ctx, review)
        .await
        .map_err(|e| Shown::action(e.into()))?;
    let flash = "You gave your seat back.".to_string();
    document::render(&state, &caller, doc, Some(flash)).await
}
