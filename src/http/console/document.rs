//! The document fragment: the document with its preview and body; while a revision is in
//! progress, the published and the working copy side by side; its pending review's
//! workflow, its review history, and the forms its reader may use (the author's edit,
//! submit and withdraw; a reviewer's claim, give back and decision).

use actix_web::{web, HttpResponse};
use askama::Template;
use uuid::Uuid;

use super::render::{rendered, when, Shown};
use super::review::ReviewPanel;
use super::revision::{Copy, RevisionPanel};
use crate::domain::{Document, DocumentStatus, Reader};
use crate::http::auth::{Caller, Role};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::usecases::DocumentRead;

/// One review of the history, as shown.
pub struct HistoryRow {
    pub status: String,
    pub submitted_by: String,
    pub submitted_at: String,
    pub decided_by: String,
    pub decided_at: String,
    pub note: String,
}

#[derive(Template)]
#[template(path = "console/document.html")]
struct DocumentFragment {
    flash: Option<String>,
    id: Uuid,
    title: String,
    status: &'static str,
    version: i64,
    published_version: Option<i64>,
    /// A revision is in progress: the published version is behind this one.
    revising: bool,
    author: String,
    /// The policy its next review follows.
    policy: String,
    updated_at: String,
    preview: String,
    body: String,
    body_source: &'static str,
    /// The published copy beside the working one, while a revision is in progress.
    revision: Option<RevisionPanel>,
    history: Vec<HistoryRow>,
    /// The pending review's workflow.
    review: Option<ReviewPanel>,
    /// The pending review a reviewer may decide (never the author's own, nor one voted on).
    decide: Option<Uuid>,
    /// Why the reader, a reviewer, may not decide it.
    own_document: bool,
    /// The author may edit (DRAFT, REJECTED; APPROVED, which starts a revision).
    editable: bool,
    starts_revision: bool,
    /// The author may submit (DRAFT) or resubmit (REJECTED).
    submittable: bool,
    resubmit: bool,
    /// The author may withdraw the pending review.
    withdrawable: bool,
    /// Idempotency keys of this rendering's forms: a double click sends one key twice.
    key_approve: Uuid,
    key_reject: Uuid,
    key_submit: Uuid,
    key_withdraw: Uuid,
    key_claim: Uuid,
}

/// GET `/console/f/documents/{id}`.
pub async fn fragment(
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let id = super::parse_id(&path)?;
    render(&state, &caller, id, None).await
}

/// The published copy of `d` beside its working copy (its body as read), while a revision
/// is in progress.
async fn revision(
    state: &AppState,
    reader: Reader<'_>,
    d: &Document,
) -> Result<Option<RevisionPanel>, ApiError> {
    if !d.in_revision() {
        return Ok(None);
    }
    let published = state.documents.published(reader, d.id).await?;
    let working = Copy {
        version: d.version,
        title: &d.title,
        body: &d.body,
    };
    let copy = Copy {
        version: published.version,
        title: &published.title,
        body: &published.body,
    };
    Ok(Some(RevisionPanel::of(copy, working)))
}

/// The document fragment of `id` as `caller` sees it, with `flash` (an action's outcome)
/// above it.
pub async fn render(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    flash: Option<String>,
) -> Result<HttpResponse, Shown> {
    let reader = crate::domain::Reader {
        id: &caller.id,
        admin: caller.has(Role::Admin),
    };
    let read = state
        .documents
        .get(reader, id)
        .await
        .map_err(ApiError::from)?;
    let history: Vec<_> = state
        .documents
        .history(reader, id, 0, 100)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let revision = revision(state, reader, &read.document).await?;
    let DocumentRead {
        document: d,
        preview,
        source,
    } = read;
    let mine = d.author_id == caller.id.as_str();
    let pending = d.status == DocumentStatus::PendingReview;
    let reviewer = caller.has(Role::Reviewer);
    let author = mine && caller.has(Role::Author);
    let submittable =
        author && matches!(d.status, DocumentStatus::Draft | DocumentStatus::Rejected);
    let starts_revision = d.status == DocumentStatus::Approved;
    let revising = d.in_revision();
    let current = history
        .iter()
        .find(|r| pending && Some(r.id) == d.current_review_id);
    let review = current.map(|r| ReviewPanel::of(r, &d, caller, chrono::Utc::now()));
    let voted = review.as_ref().is_some_and(|r| r.voted.is_some());
    rendered(&DocumentFragment {
        flash,
        id: d.id,
        title: d.title,
        status: d.status.as_str(),
        version: d.version,
        published_version: d.published_version,
        revising,
        author: d.author_id,
        policy: d.policy,
        updated_at: when(d.updated_at),
        preview,
        body: d.body,
        body_source: source.as_str(),
        revision,
        history: history
            .iter()
            .map(|r| HistoryRow {
                status: r.status.as_str().to_string(),
                submitted_by: r.submitted_by.clone(),
                submitted_at: when(r.submitted_at),
                decided_by: r.decided_by.clone().unwrap_or_default(),
                decided_at: r.decided_at.map(when).unwrap_or_default(),
                note: r.reason.clone().or(r.comment.clone()).unwrap_or_default(),
            })
            .collect(),
        review,
        decide: d
            .current_review_id
            .filter(|_| pending && reviewer && !mine && !voted),
        own_document: pending && reviewer && mine,
        editable: submittable || (author && starts_revision),
        starts_revision,
        submittable,
        resubmit: d.status == DocumentStatus::Rejected,
        withdrawable: pending && mine && caller.has(Role::Author),
        key_approve: Uuid::new_v4(),
        key_reject: Uuid::new_v4(),
        key_submit: Uuid::new_v4(),
        key_withdraw: Uuid::new_v4(),
        key_claim: Uuid::new_v4(),
    })
}
