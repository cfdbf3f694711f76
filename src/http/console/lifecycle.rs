//! The document's life after review, in the console: archive it (its author or an admin,
//! after the page's confirmation, at the version the page showed) and comment on it
//! (anyone who may read it). Both go through the JSON API's functions; a refusal reads as
//! a sentence beside its form.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::document;
use super::render::{form, Shown};
use crate::domain::{Archived, Document, DocumentStatus};
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::post::Ran;
use crate::http::state::AppState;
use crate::http::{archive, comments};

#[derive(Deserialize)]
pub struct ArchiveForm {
    #[serde(default)]
    reason: String,
    /// The version the page showed: a document that moved on since is not archived.
    #[serde(default)]
    version: String,
}

impl ArchiveForm {
    /// The JSON body the API's archive takes (an empty reason left out), and the version
    /// the page showed.
    fn json(&self) -> Result<(Vec<u8>, Option<i64>), ApiError> {
        let mut v = json!({});
        if !self.reason.trim().is_empty() {
            v["reason"] = json!(self.reason);
        }
        let seen = match self.version.as_str() {
            "" => None,
            s => Some(s.parse::<i64>().map_err(|_| {
                ApiError::validation("The page sent a version that is not a number.")
            })?),
        };
        if let Some(n) = seen {
            v["version"] = json!(n);
        }
        Ok((
            serde_json::to_vec(&v).expect("a JSON value serializes"),
            seen,
        ))
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
    let f: ArchiveForm = form(&req, payload, &state).await?;
    let id = super::parse_id(&path)?;
    let (bytes, seen) = f.json().map_err(|e| Shown::beside(e, "#archive-error"))?;
    let archived = archive::archiving(&req, &state, caller.clone(), id, bytes).await;
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
    fn json(&self) -> Vec<u8> {
        let mut v = json!({ "body": self.body });
        if !self.review.is_empty() {
            v["review_id"] = json!(self.review);
        }
        serde_json::to_vec(&v).expect("a JSON value serializes")
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
    let f: CommentForm = form(&req, payload, &state).await?;
    let id = super::parse_id(&path)?;
    let posted = comments::commenting(&req, &state, caller.clone(), id, f.json()).await;
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
