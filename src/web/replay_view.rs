//! A replay as the JSON API and the console show it: its progress (sent, left, its rate,
//! when it should end) computed once from the stored row.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::replay::ReplayState;
use crate::store::ReplayRecord;

/// What a replay was asked to send (null: not filtered).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReplayFilters {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub types: Option<Vec<String>>,
    pub document_ids: Option<Vec<Uuid>>,
    /// The keys of the spaces whose documents it sends.
    pub spaces: Option<Vec<String>>,
}

/// A replay and its progress.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Replay)]
pub struct ReplayView {
    pub id: Uuid,
    #[schema(example = "history")]
    pub mode: &'static str,
    pub target_queue: String,
    /// running, done, cancelled or failed
    #[schema(example = "running")]
    pub state: &'static str,
    /// Events sent and confirmed by the broker (each once, however often it was resent).
    pub sent: i64,
    /// Events the replay sends in all (counted when it was asked for).
    pub total: i64,
    pub events_left: i64,
    /// Events sent a second time after the instance running the replay stopped (the batch
    /// it had in flight): at most that many reached the queue twice.
    pub duplicates: i64,
    /// How often another instance took the replay over.
    pub takeovers: i32,
    /// Events a second, from its start until now (or its end).
    pub rate_per_sec: f64,
    /// When it should end at that rate (running replays only).
    pub expected_end: Option<DateTime<Utc>>,
    pub filters: ReplayFilters,
    /// The admin who asked for it.
    pub requested_by: String,
    /// Why it failed.
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    /// When its last batch was confirmed.
    pub progressed_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl ReplayView {
    pub fn of(r: &ReplayRecord, now: DateTime<Utc>) -> Self {
        let until = r.finished_at.unwrap_or(now);
        let secs = (until - r.started_at).num_milliseconds().max(1) as f64 / 1000.0;
        let rate = r.sent as f64 / secs;
        let left = (r.total - r.sent).max(0);
        let running = r.state == ReplayState::Running;
        let expected_end = (running && rate > 0.0)
            .then(|| chrono::Duration::try_milliseconds((left as f64 / rate * 1000.0) as i64))
            .flatten()
            .and_then(|d| now.checked_add_signed(d));
        Self {
            id: r.id,
            mode: r.mode.as_str(),
            target_queue: r.target_queue.clone(),
            state: r.state.as_str(),
            sent: r.sent,
            total: r.total,
            events_left: if running { left } else { 0 },
            duplicates: r.duplicates,
            takeovers: r.takeovers,
            rate_per_sec: (rate * 10.0).round() / 10.0,
            expected_end,
            filters: ReplayFilters {
                from: r.from_at,
                to: r.to_at,
                types: r.types.clone(),
                document_ids: r.document_ids.clone(),
                spaces: r.spaces.clone(),
            },
            requested_by: r.requested_by.clone(),
            error: r.error.clone(),
            started_at: r.started_at,
            progressed_at: r.progressed_at,
            finished_at: r.finished_at,
        }
    }
}

/// The running replays, then the most recent others.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReplayList {
    pub items: Vec<ReplayView>,
}

/// Finished replays a list shows, besides the running ones.
pub const RECENT: i64 = 20;
