//! A document's comments as the console shows them: oldest first, a page at a time (the
//! document page holds the first, `GET /console/f/documents/{id}/comments?cursor=N` the
//! ones after comment N), each with its author, its time and the review round it is about.

use actix_web::{web, HttpResponse};
use askama::Template;
use uuid::Uuid;

use super::history::{AfterQuery, Rounds};
use super::render::{rendered, when, Shown};
use crate::domain::{PostedComment, Reader};
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::paging;
use crate::web::state::AppState;

/// Comments on a page.
pub const PAGE: i64 = 20;

/// A comment as shown.
pub struct CommentRow {
    pub seq: i64,
    pub author: String,
    pub at: String,
    pub body: String,
    /// "review round 2", when it is about one.
    pub round: Option<String>,
}

/// A page of comments: the rows, and the query of the page after it.
pub struct CommentPage {
    pub rows: Vec<CommentRow>,
    pub next: Option<String>,
}

/// The comments of `id` after comment number `after` (0: from the first), their review
/// rounds found in `rounds` (read on as far as they need).
pub async fn page_of(
    state: &AppState,
    reader: Reader<'_>,
    id: Uuid,
    after: i64,
    rounds: &mut Rounds,
) -> Result<CommentPage, ApiError> {
    let mut found = state
        .documents
        .comments(reader, id, after, PAGE + 1)
        .await?;
    let next = paging::cut(&mut found, PAGE, |c| format!("cursor={}", c.seq));
    let wanted: Vec<Uuid> = found.iter().filter_map(|c| c.review_id).collect();
    rounds.find(state, reader, id, &wanted).await?;
    let rows = found.into_iter().map(|c| row(c, rounds)).collect();
    Ok(CommentPage { rows, next })
}

fn row(c: PostedComment, rounds: &Rounds) -> CommentRow {
    let round = c.review_id.map(|r| match rounds.get(r) {
        Some((n, _)) => format!("review round {n}"),
        None => "a review round".to_string(),
    });
    CommentRow {
        seq: c.seq,
        author: c.author_id,
        at: when(c.created_at),
        body: c.body,
        round,
    }
}

/// The rows of a page after the first: `<li>`s that take the place of the "more" item.
#[derive(Template)]
#[template(path = "console/comment_rows.html")]
struct CommentRows {
    id: Uuid,
    comments: Vec<CommentRow>,
    comments_next: Option<String>,
}

/// GET `/console/f/documents/{id}/comments?cursor=N`: the comments after comment N.
pub async fn page(
    path: web::Path<String>,
    query: web::Query<AfterQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let id = super::parse_id(&path)?;
    let reader = caller.reader();
    let mut rounds = Rounds::first(&state, reader, id).await?;
    let after = query.after()?;
    let page = page_of(&state, reader, id, after, &mut rounds).await?;
    rendered(&CommentRows {
        id,
        comments: page.rows,
        comments_next: page.next,
    })
}
