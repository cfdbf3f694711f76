//! The replays section of the operator's page: each running replay with a progress bar,
//! the events sent and left, its rate, when it should end, and a cancel button; then the
//! recent finished ones. Reads and cancels through the use cases the JSON API calls.

use actix_web::{web, HttpResponse};
use askama::Template;
use chrono::Utc;

use super::render::{duration, html, when, Shown};
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::replay_view::{ReplayView, RECENT};
use crate::web::state::AppState;

/// A running replay's figures, as the page shows them.
pub struct Running {
    pub id: String,
    pub mode: &'static str,
    pub target_queue: String,
    pub requested_by: String,
    pub started: String,
    pub sent: i64,
    /// The progress bar's end (at least 1: a bar of 0 is not drawn).
    pub max: i64,
    pub percent: i64,
    pub left: i64,
    pub rate: f64,
    pub expected_end: String,
    pub duplicates: i64,
}

/// A finished replay's line.
pub struct Finished {
    pub id: String,
    pub mode: &'static str,
    pub state: &'static str,
    pub target_queue: String,
    pub sent: i64,
    pub total: i64,
    pub duplicates: i64,
    pub started: String,
    pub took: String,
    pub error: String,
}

#[derive(Template)]
#[template(path = "console/replays.html")]
struct Section {
    flash: Option<String>,
    running: Vec<Running>,
    finished: Vec<Finished>,
}

fn running(r: &ReplayView) -> Running {
    Running {
        id: r.id.to_string(),
        mode: r.mode,
        target_queue: r.target_queue.clone(),
        requested_by: r.requested_by.clone(),
        started: when(r.started_at),
        sent: r.sent,
        max: r.total.max(1),
        percent: (r.sent * 100).checked_div(r.total).unwrap_or(0).min(100),
        left: r.events_left,
        rate: r.rate_per_sec,
        expected_end: r
            .expected_end
            .map(when)
            .unwrap_or_else(|| "not known yet".into()),
        duplicates: r.duplicates,
    }
}

fn finished(r: &ReplayView) -> Finished {
    let end = r.finished_at.unwrap_or(r.progressed_at);
    Finished {
        id: r.id.to_string(),
        mode: r.mode,
        state: r.state,
        target_queue: r.target_queue.clone(),
        sent: r.sent,
        total: r.total,
        duplicates: r.duplicates,
        started: when(r.started_at),
        took: duration((end - r.started_at).num_seconds()),
        error: r.error.clone().unwrap_or_default(),
    }
}

/// The section's HTML, for the operator page to place (`flash`: what an action did).
pub async fn section(
    state: &AppState,
    caller: &Caller,
    flash: Option<String>,
) -> Result<String, ApiError> {
    caller.require(Role::Admin)?;
    let now = Utc::now();
    let rows = state.replays.recent(RECENT).await?;
    let list: Vec<ReplayView> = rows.iter().map(|r| ReplayView::of(r, now)).collect();
    let (run, done): (Vec<&ReplayView>, Vec<&ReplayView>) =
        list.iter().partition(|r| r.state == "running");
    let page = Section {
        flash,
        running: run.into_iter().map(running).collect(),
        finished: done.into_iter().map(finished).collect(),
    };
    page.render()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("template: {e}")))
}

/// POST `/console/f/replays/{id}/cancel`: the JSON API's cancel; answers the section again.
pub async fn cancel(
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Admin).map_err(Shown::action)?;
    let id = uuid::Uuid::parse_str(&path)
        .map_err(|_| Shown::action(ApiError::not_found("no such replay")))?;
    let cancelled = state.replays.cancel(id, &caller.id).await;
    let replay = cancelled.map_err(|e| Shown::action(e.into()))?;
    let view = ReplayView::of(&replay, Utc::now());
    let flash = format!(
        "The replay to {} is cancelled after {} of {} events.",
        view.target_queue, view.sent, view.total
    );
    let body = section(&state, &caller, Some(flash)).await?;
    Ok(html(actix_web::http::StatusCode::OK, body))
}
