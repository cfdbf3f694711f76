//! What changed between two versions of a document (`GET /api/v1/documents/{id}/diff`): by
//! default from its published revision to its working copy, as JSON hunks with word-level
//! marks, or, for `Accept: text/x-diff`, as a unified diff. Any role that may read the
//! document reads it.

use actix_web::http::header::{self, Accept, Header};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::diff::{self, Op, Word};
use crate::usecases::{Held, HeldCopy};
use crate::web::auth::Caller;
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

/// The change of a document between two of its versions.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Diff)]
pub struct DiffView {
    /// The version compared from; null for `published` when nothing is published.
    from: Option<i64>,
    to: Option<i64>,
    /// The titles, when they differ (a side with nothing published: null).
    title: Option<TitleChange>,
    /// Lines removed and added in all.
    removed: usize,
    added: usize,
    /// The changes, each with up to 3 unchanged lines around it.
    hunks: Vec<HunkView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TitleChange {
    from: Option<String>,
    to: Option<String>,
}

/// A unified diff's hunk: where it starts in each version (from 1; a side it has no line of
/// starts at the line before) and how many lines of each it spans.
#[derive(Serialize, utoipa::ToSchema)]
pub struct HunkView {
    from_line: usize,
    from_count: usize,
    to_line: usize,
    to_count: usize,
    lines: Vec<LineView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LineView {
    /// equal, insert or delete
    #[schema(value_type = String, example = "insert")]
    op: Op,
    text: String,
    /// For a line a change replaced: its runs of text, `changed` where they differ from the
    /// line(s) on the other side. They rebuild `text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<WordView>>)]
    words: Option<Vec<Word>>,
}

#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct WordView {
    text: String,
    changed: bool,
}

/// `published`, `working` or a version number.
fn held(value: Option<&str>, default: Held, name: &str) -> Result<Held, ApiError> {
    match value {
        None => Ok(default),
        Some("published") => Ok(Held::Published),
        Some("working") => Ok(Held::Working),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1 && n.to_string() == v)
            .map(Held::Version)
            .ok_or_else(|| {
                ApiError::validation(format!(
                    "{name}: give published, working or a version number (1 or more)"
                ))
            }),
    }
}

/// Whether the caller prefers the unified diff (`text/x-diff`) to JSON.
fn wants_unified(req: &HttpRequest) -> bool {
    let Ok(accept) = Accept::parse(req) else {
        return false;
    };
    let ranked = accept.ranked();
    let rank = |essence: &str| ranked.iter().position(|m| m.essence_str() == essence);
    match (rank("text/x-diff"), rank("application/json")) {
        (Some(d), Some(j)) => d < j,
        (Some(_), None) => true,
        _ => false,
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/diff",
    tag = "documents",
    summary = "What changed between two versions: by default the published revision and the working copy",
    description = "JSON hunks with word-level marks inside replaced lines; with `Accept: text/x-diff`, a \
                   unified diff. A document holds its published and its working version; before \
                   its first approval (or once archived) `published` is an empty text.",
    params(
        ("id" = Uuid, Path, description = "document id"),
        ("from" = Option<String>, Query, pattern = "^(published|working|[1-9][0-9]{0,17})$", description = "published (default), working, or a version number the document holds"),
        ("to" = Option<String>, Query, pattern = "^(published|working|[1-9][0-9]{0,17})$", description = "working (default), published, or a version number the document holds")
    ),
    responses(
        (status = 200, description = "the change (JSON, or a unified diff when text/x-diff is asked first)", content((DiffView = "application/json"), (String = "text/x-diff"))),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document (or a draft of someone else's), or a version it does not hold", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: from or to is not published, working or a version number", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn diff(
    req: HttpRequest,
    path: web::Path<Uuid>,
    query: web::Query<DiffQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let from = held(query.from.as_deref(), Held::Published, "from")?;
    let to = held(query.to.as_deref(), Held::Working, "to")?;
    let (old, new) = state
        .documents
        .versions(caller.reader(), *path, from, to)
        .await?;
    // The matching is bounded (diff::TIME_BUDGET) but CPU-bound: off the async workers.
    let unified = wants_unified(&req);
    let rendered = tokio::task::spawn_blocking(move || render(&old, &new, unified))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("diff task failed: {e}")))?;
    Ok(match rendered {
        Rendered::Json(view) => HttpResponse::Ok().json(view),
        Rendered::Unified(text) => HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, "text/x-diff; charset=utf-8"))
            .body(text),
    })
}

enum Rendered {
    Json(DiffView),
    Unified(String),
}

fn render(old: &HeldCopy, new: &HeldCopy, unified: bool) -> Rendered {
    let lines = diff::lines(&old.body, &new.body);
    let (removed, added) = diff::counts(&lines);
    let hunks = diff::hunks(&lines, diff::CONTEXT_LINES);
    if unified {
        let label = |c: &HeldCopy| match (c.version, &c.title) {
            (Some(v), Some(t)) => format!("v{v}\t{t}"),
            _ => "nothing published".to_string(),
        };
        return Rendered::Unified(diff::unified(&hunks, &label(old), &label(new)));
    }
    let title = (old.title != new.title).then(|| TitleChange {
        from: old.title.clone(),
        to: new.title.clone(),
    });
    let hunks = hunks
        .into_iter()
        .map(|h| HunkView {
            from_line: h.from_line,
            from_count: h.from_count,
            to_line: h.to_line,
            to_count: h.to_count,
            lines: h
                .lines
                .into_iter()
                .map(|l| LineView {
                    op: l.op,
                    text: l.text.to_string(),
                    words: l.words,
                })
                .collect(),
        })
        .collect();
    Rendered::Json(DiffView {
        from: old.version,
        to: new.version,
        title,
        removed,
        added,
        hunks,
    })
}
