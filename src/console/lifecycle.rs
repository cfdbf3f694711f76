//! The document's life after review, in the console: archive it (its author or an admin,
//! after the page's confirmation, at the version the page showed) and comment on it
//! (anyone who may read it). Both run the use cases the JSON API runs, under the form's
//! `Idempotency-Key`; a refusal reads as a sentence beside its form.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use super::document;
use super::render::{sent_form, Shown};
use crate::domain::{ArchiveReason, Archived, CommentBody, Document, DocumentStatus};
use crate::usecases::Context;
use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorCode};
use crate::web::post::{self, Ran};
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct ArchiveForm {
    #[serde(default)]
    reason: String,
    /// The version the page showed: a document that moved on since is not archived.
    #[serde(default)]
    version: String,
}

impl ArchiveForm {
    /// The version the page showed, if it said.
    fn seen(&self) -> Result<Option<i64>, ApiError> {
        match self.version.as_str() {
            "" => Ok(None),
            s => s
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ApiError::validation("The page sent a version that is not a number.")),
        }
    }

    /// The reason, as the rules take it (an empty one left out).
    fn reason(&self) -> Result<Option<ArchiveReason>, ApiError> {
        let given = Some(self.reason.as_str()).filter(|r| !r.trim().is_empty());
        let reason = given.map(ArchiveReason::parse).transpose();
        reason.map_err(|e| ApiError::validation(e.to_string()))
    }
}

/// POST `/console/f/documents/{id}/archive`: the JSON API's archive.
pub async fn archive(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    let (f, bytes): (ArchiveForm, _) = sent_form(&req, payload, &state).await?;
    let id = super::parse_id(&path)?;
    let seen = f.seen().map_err(|e| Shown::beside(e, "#archive-error"))?;
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let archived = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let reason = f.reason()?;
        if seen.is_some_and(|v| v < 1) {
            return Err(ApiError::validation("version: must be at least 1"));
        }
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.archive(ctx, id, reason, seen).await?)
    })
    .await;
    match archived.and_then(Ran::succeeded) {
        Ok(done) => {
            let flash = archived_flash(&done);
            document::render(&state, &caller, id, Some(flash)).await
        }
        Err(e) => Err(refused_archive(&state, &caller, (id, seen), e).await),
    }
}

fn archived_flash(done: &Archived) -> String {
    let v = done.document.version;
    match &done.review {
        Some(_) => format!("Archived at version {v}; its pending review was withdrawn."),
        None => format!("Archived at version {v}."),
    }
}

/// A refused archive of `id` (at version `seen`, as the page showed it) in a sentence,
/// beside the form: the document as it is now says why.
async fn refused_archive(
    state: &AppState,
    caller: &Caller,
    (id, seen): (Uuid, Option<i64>),
    e: ApiError,
) -> Shown {
    let mut shown = Shown::beside(e, "#archive-error");
    let code = shown.error.code;
    shown.message = match code {
        ErrorCode::InvalidState => {
            let now = state.documents.get(caller.reader(), id).await.ok();
            now.and_then(|read| moved_on(&read.document, seen))
        }
        ErrorCode::LockNotAcquired => Some(format!(
            "Someone is changing this document right now; try again in {} s.",
            shown.error.retry_after_secs.unwrap_or(1)
        )),
        ErrorCode::Forbidden => {
            Some("Only the document's author or an admin may archive it.".to_string())
        }
        _ => None,
    };
    shown
}

/// Why `d` could not be archived from a page that showed version `seen`, if it shows.
fn moved_on(d: &Document, seen: Option<i64>) -> Option<String> {
    if d.status == DocumentStatus::Archived {
        return Some("This document is archived already.".to_string());
    }
    let seen = seen.filter(|v| *v != d.version)?;
    Some(format!(
        "The document changed since this page was loaded (version {seen}): it is at version {} \
         now ({}). Nothing was archived; look at it again before archiving.",
        d.version,
        d.status.as_str()
    ))
}

#[derive(Deserialize)]
pub struct CommentForm {
    #[serde(default)]
    body: String,
    /// The review round it is about (the checkbox's value), if ticked.
    #[serde(default)]
    review: String,
}

impl CommentForm {
    /// The comment's text, as the rules take it.
    fn text(&self) -> Result<CommentBody, ApiError> {
        CommentBody::parse(&self.body).map_err(|e| ApiError::validation(e.to_string()))
    }

    /// The review round it is about, if ticked.
    fn round(&self) -> Result<Option<Uuid>, ApiError> {
        let ticked = Some(self.review.as_str()).filter(|r| !r.is_empty());
        let round = ticked.map(Uuid::try_parse).transpose();
        round.map_err(|_| ApiError::validation("review_id: not a review of this service"))
    }
}

/// POST `/console/f/documents/{id}/comments/add`: the JSON API's comment.
pub async fn comment(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    let (f, bytes): (CommentForm, _) = sent_form(&req, payload, &state).await?;
    let id = super::parse_id(&path)?;
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let posted = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let round = f.round()?;
        let text = f.text()?;
        let ctx = Context { held_key, ..ctx };
        Ok(st.documents.comment(ctx, id, text, round).await?)
    })
    .await;
    let done = posted.and_then(Ran::succeeded).map_err(|e| {
        let mut shown = Shown::beside(e, "#comment-error");
        if shown.error.code == ErrorCode::InvalidState {
            shown.message = Some("The document was archived: comments are closed.".into());
        }
        shown
    })?;
    let flash = format!("Comment {} added.", done.comment.seq);
    document::render(&state, &caller, id, Some(flash)).await
}
