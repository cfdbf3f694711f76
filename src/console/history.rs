//! A document's review rounds as the console reads them: the history's first page on the
//! document page, the pages after it (`GET /console/f/documents/{id}/history?cursor=C&
//! rounds=N`), and the rounds a page needs beyond the first (the pending one, the ones
//! comments point at), read page by page, boundedly. A round's number is its place in the
//! history, from 1; the cursor is the JSON API's (`next_cursor`), which is no round number.

use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;
use uuid::Uuid;

use super::render::{rendered, when, Shown};
use crate::domain::{Reader, Review};
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::paging;
use crate::web::state::AppState;

/// Rounds on a page of the history.
pub const PAGE: i64 = 20;
/// The most rounds a page's `rounds=N` may say came before it: more than any document has,
/// and far enough from `i64::MAX` that the numbers of a page's rows cannot overflow.
const MAX_ROUNDS_BEFORE: i64 = u32::MAX as i64;
/// Rounds per read when looking for one beyond the first page, and how many such reads.
const WALK: i64 = 100;
const WALKS: usize = 10;

/// One review round of the history, as shown.
pub struct HistoryRow {
    pub id: Uuid,
    /// Its number, from 1, in the order submitted.
    pub round: i64,
    pub status: &'static str,
    /// The document version it reviewed.
    pub version: i64,
    /// A re-verification of the published version (opened by the scheduler).
    pub reverify: bool,
    pub submitted_by: String,
    pub submitted_at: String,
    pub decided_by: String,
    pub decided_at: String,
    pub note: String,
}

impl HistoryRow {
    fn of(round: i64, r: &Review) -> Self {
        HistoryRow {
            id: r.id,
            round,
            status: r.status.as_str(),
            version: r.document_version,
            reverify: r.kind == crate::domain::ReviewKind::Reverify,
            submitted_by: r.submitted_by.clone(),
            submitted_at: when(r.submitted_at),
            decided_by: r.decided_by.clone().unwrap_or_default(),
            decided_at: r.decided_at.map(when).unwrap_or_default(),
            note: r.reason.clone().or(r.comment.clone()).unwrap_or_default(),
        }
    }
}

/// The rows of `page`, whose first round is number `first`.
fn rows(page: &[(i64, Review)], first: i64) -> Vec<HistoryRow> {
    (first..)
        .zip(page)
        .map(|(n, (_, r))| HistoryRow::of(n, r))
        .collect()
}

/// The query of the page after the review of cursor `cursor`, the `rounds`th round.
fn next_query(cursor: i64, rounds: i64) -> String {
    format!("cursor={cursor}&rounds={rounds}")
}

/// The rounds a page read: the history's first page, and any read after it.
pub struct Rounds {
    /// Every round read, in order from the first, each with its cursor.
    read: Vec<(i64, Review)>,
    /// How many of them the first page shows.
    shown: usize,
    /// The first page is not the last.
    more: bool,
    /// Rounds after those read may exist.
    unread: bool,
}

impl Rounds {
    /// The first page of `id`'s history (not found for a reader who may not see it).
    pub async fn first(state: &AppState, reader: Reader<'_>, id: Uuid) -> Result<Self, ApiError> {
        let mut read = state.documents.history(reader, id, 0, PAGE + 1).await?;
        let more = read.len() as i64 > PAGE;
        read.truncate(PAGE as usize);
        Ok(Rounds {
            shown: read.len(),
            read,
            more,
            unread: more,
        })
    }

    /// Reads on until every review of `wanted` is among the rounds read (or none are left,
    /// or [`WALKS`] reads were made).
    pub async fn find(
        &mut self,
        state: &AppState,
        reader: Reader<'_>,
        id: Uuid,
        wanted: &[Uuid],
    ) -> Result<(), ApiError> {
        for _ in 0..WALKS {
            if !self.unread || wanted.iter().all(|w| self.get(*w).is_some()) {
                break;
            }
            let after = self.read.last().map_or(0, |(n, _)| *n);
            let page = state.documents.history(reader, id, after, WALK).await?;
            self.unread = page.len() as i64 == WALK;
            self.read.extend(page);
        }
        Ok(())
    }

    /// The number of review `id`'s round and the review, if read.
    pub fn get(&self, id: Uuid) -> Option<(i64, &Review)> {
        let at = self.read.iter().position(|(_, r)| r.id == id)?;
        Some((at as i64 + 1, &self.read[at].1))
    }

    /// The rows of the first page.
    pub fn rows(&self) -> Vec<HistoryRow> {
        rows(&self.read[..self.shown], 1)
    }

    /// The query of the page after the first, if there is one.
    pub fn next(&self) -> Option<String> {
        let last = self.read[..self.shown].last().map(|(c, _)| *c);
        last.filter(|_| self.more)
            .map(|c| next_query(c, self.shown as i64))
    }
}

/// The rows of a page after the first: `<tr>`s that take the place of the "more" row.
#[derive(Template)]
#[template(path = "console/history_rows.html")]
struct HistoryRows {
    id: Uuid,
    history: Vec<HistoryRow>,
    history_next: Option<String>,
}

/// The query of a page after the first: `cursor=N`, the number of the last item before it
/// (the JSON API's `next_cursor`).
#[derive(Deserialize)]
pub struct AfterQuery {
    cursor: Option<String>,
}

impl AfterQuery {
    /// The number after which the page starts (0: from the first); 422 for a cursor this
    /// service did not issue.
    pub fn after(&self) -> Result<i64, ApiError> {
        paging::after(self.cursor.as_deref())
    }
}

/// The query of a page of the history after the first: the cursor, and how many rounds
/// came before (for their numbers).
#[derive(Deserialize)]
pub struct HistoryQuery {
    cursor: Option<String>,
    #[serde(default)]
    rounds: i64,
}

/// GET `/console/f/documents/{id}/history?cursor=C&rounds=N`: the rounds after the one of
/// cursor C, the Nth.
pub async fn page(
    path: web::Path<String>,
    query: web::Query<HistoryQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let id = super::parse_id(&path)?;
    let after = paging::after(query.cursor.as_deref())?;
    // The request's number, only ever shown: clamped, so that `before + PAGE` and the rows'
    // numbers stay far from overflowing whatever it says.
    let before = query.rounds.clamp(0, MAX_ROUNDS_BEFORE);
    let reader = caller.reader();
    let mut page = state
        .documents
        .history(reader, id, after, PAGE + 1)
        .await
        .map_err(ApiError::from)?;
    let shown = before + PAGE;
    let next = paging::cut(&mut page, PAGE, |(c, _)| next_query(*c, shown));
    rendered(&HistoryRows {
        id,
        history: rows(&page, before + 1),
        history_next: next,
    })
}
