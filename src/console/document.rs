//! The document fragment: the document with its preview and body; while a revision is in
//! progress, the published and the working copy side by side; its pending review's
//! workflow, its review history and its comments, a page of each; and the forms its reader
//! may use (the author's edit, submit and withdraw; the author's or an admin's archive; a
//! reviewer's claim, give back and decision; anyone's comment).

use actix_web::{web, HttpResponse};
use askama::Template;
use uuid::Uuid;

use super::comments::{self, CommentRow};
use super::history::{HistoryRow, Rounds};
use super::render::{rendered, when, Shown};
use super::review::ReviewPanel;
use super::revision::{Copy, RevisionPanel};
use crate::domain::{Document, DocumentStatus, Reader, ReviewKind, ReviewStatus, SpaceRole};
use crate::usecases::DocumentRead;
use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorCode};
use crate::web::state::AppState;

/// The review round a new comment may be about: the document's current one.
pub struct RoundNow {
    pub id: Uuid,
    /// "round 2, pending".
    pub label: String,
}

/// What the reader may do with the document.
struct Forms {
    /// The author may edit (DRAFT, REJECTED; APPROVED, which starts a revision).
    editable: bool,
    starts_revision: bool,
    /// The author may submit (DRAFT) or resubmit (REJECTED).
    submittable: bool,
    resubmit: bool,
    /// The author may withdraw the pending review.
    withdrawable: bool,
    /// The author or an admin may archive it (any status but ARCHIVED).
    archivable: bool,
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
    archived: bool,
    /// Was approved; its re-verification was rejected or not decided in time.
    expired: bool,
    /// When its published version is next due for re-verification.
    verify_by: Option<String>,
    pending: bool,
    /// Never submitted: its author's and the admins' alone.
    private: bool,
    author: String,
    /// The key of its space.
    space: String,
    /// The policy its next review follows.
    policy: String,
    updated_at: String,
    preview: String,
    body: String,
    body_source: &'static str,
    /// The published copy beside the working one, while a revision is in progress.
    revision: Option<RevisionPanel>,
    history: Vec<HistoryRow>,
    history_next: Option<String>,
    comments: Vec<CommentRow>,
    comments_next: Option<String>,
    round_now: Option<RoundNow>,
    /// The pending review's workflow.
    review: Option<ReviewPanel>,
    /// The pending review a reviewer may decide (never the author's own, nor one voted on).
    decide: Option<Uuid>,
    /// Why the reader, a reviewer, may not decide it.
    own_document: bool,
    forms: Forms,
    /// Idempotency keys of this rendering's forms: a double click sends one key twice.
    key_approve: Uuid,
    key_reject: Uuid,
    key_submit: Uuid,
    key_withdraw: Uuid,
    key_claim: Uuid,
    key_archive: Uuid,
    key_comment: Uuid,
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

/// The forms `caller` may use on `d` (`reverifying`: a re-verification of its published
/// version is open, and it is not submitted until that is decided).
fn forms(d: &Document, caller: &Caller, reverifying: bool) -> Forms {
    let mine = d.author_id == caller.id.as_str();
    // Co-editing: once submitted, every author of the space edits, submits and withdraws.
    let author = (mine || d.ever_submitted()) && caller.access.has(&d.space, SpaceRole::Author);
    let status = d.status;
    Forms {
        editable: author
            && matches!(
                status,
                DocumentStatus::Draft
                    | DocumentStatus::Rejected
                    | DocumentStatus::Approved
                    | DocumentStatus::Expired
            ),
        starts_revision: status == DocumentStatus::Approved,
        submittable: author
            && !reverifying
            && matches!(
                status,
                DocumentStatus::Draft | DocumentStatus::Rejected | DocumentStatus::Expired
            ),
        resubmit: matches!(status, DocumentStatus::Rejected | DocumentStatus::Expired),
        withdrawable: author && status == DocumentStatus::PendingReview,
        archivable: (mine || caller.reader().administers(&d.space))
            && status != DocumentStatus::Archived,
    }
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
    // Archived since `d` was read: nothing is published any more, and no revision shows.
    let published = match state
        .documents
        .published(reader, d.id)
        .await
        .map_err(ApiError::from)
    {
        Err(e) if e.code == ErrorCode::NotFound => return Ok(None),
        other => other?,
    };
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
    let reader = caller.reader();
    let read = state
        .documents
        .get(reader, id)
        .await
        .map_err(ApiError::from)?;
    let mut rounds = Rounds::first(state, reader, id).await?;
    let current = read.document.current_review_id;
    rounds
        .find(state, reader, id, &current.into_iter().collect::<Vec<_>>())
        .await?;
    let comments = comments::page_of(state, reader, id, 0, &mut rounds).await?;
    let revision = revision(state, reader, &read.document).await?;
    let DocumentRead {
        document: d,
        preview,
        source,
    } = read;
    let mine = d.author_id == caller.id.as_str();
    let reviewer = caller.access.has(&d.space, SpaceRole::Reviewer);
    let now = current.and_then(|c| rounds.get(c));
    // Its current review is being decided: a submitted version's, or a re-verification's.
    let pending = now.is_some_and(|(_, r)| {
        r.status == ReviewStatus::Pending && super::review::deciding(&d, r.kind)
    });
    let reverifying = pending && now.is_some_and(|(_, r)| r.kind == ReviewKind::Reverify);
    let review = now
        .filter(|_| pending)
        .map(|(_, r)| ReviewPanel::of(r, &d, caller, chrono::Utc::now()));
    let voted = review.as_ref().is_some_and(|r| r.voted.is_some());
    rendered(&DocumentFragment {
        flash,
        id: d.id,
        status: d.status.as_str(),
        version: d.version,
        published_version: d.published_version,
        revising: d.in_revision(),
        archived: d.status == DocumentStatus::Archived,
        expired: d.status == DocumentStatus::Expired,
        verify_by: d.verify_by.map(when),
        pending,
        private: !d.ever_submitted(),
        author: d.author_id.clone(),
        space: d.space.clone(),
        policy: d.policy.clone(),
        updated_at: when(d.updated_at),
        preview,
        body_source: source.as_str(),
        revision,
        history: rounds.rows(),
        history_next: rounds.next(),
        comments: comments.rows,
        comments_next: comments.next,
        round_now: now.map(|(n, r)| RoundNow {
            id: r.id,
            label: format!("round {n}, {}", r.status.as_str().to_lowercase()),
        }),
        review,
        decide: current.filter(|_| pending && reviewer && !mine && !voted),
        own_document: pending && reviewer && mine,
        forms: forms(&d, caller, reverifying),
        key_approve: Uuid::new_v4(),
        key_reject: Uuid::new_v4(),
        key_submit: Uuid::new_v4(),
        key_withdraw: Uuid::new_v4(),
        key_claim: Uuid::new_v4(),
        key_archive: Uuid::new_v4(),
        key_comment: Uuid::new_v4(),
        title: d.title,
        body: d.body,
    })
}
