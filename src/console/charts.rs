//! The operator page's pictures: events published per minute over the last hour (from the
//! retained outbox rows, so every instance draws the same one), the backlog and parked
//! rows now, and the required queues. The figures travel as data attributes of the
//! fragment; `assets/console/charts.js` draws them with the vendored uPlot, after each
//! refresh of the fragment.

use crate::usecases::OutboxStats;
use crate::web::error::ApiError;
use crate::web::readiness::ReadinessView;
use crate::web::state::AppState;

/// The minutes the delivery chart spans, the current one included.
const MINUTES: i32 = 60;

/// One required queue's line.
pub struct RequiredQueue {
    pub name: String,
    /// "present" or "missing"; "unknown" while the broker cannot be asked.
    pub state: &'static str,
}

pub struct Charts {
    /// The minutes' starts, in Unix seconds, as a JSON array.
    pub minutes: String,
    /// Events published in each of those minutes, as a JSON array.
    pub published: String,
    /// Their sum.
    pub published_total: i64,
    pub undelivered: i64,
    pub parked: i64,
    pub required_queues: Vec<RequiredQueue>,
}

/// The figures of the charts, and the required queues as `/readyz` sees them.
pub async fn charts(
    state: &AppState,
    stats: &OutboxStats,
    ready: &ReadinessView,
) -> Result<Charts, ApiError> {
    let per_minute = state.outbox_admin.published_per_minute(MINUTES).await?;
    let minutes: Vec<i64> = per_minute.iter().map(|(m, _)| m.timestamp()).collect();
    let published: Vec<i64> = per_minute.iter().map(|(_, n)| *n).collect();
    let q = &ready.checks.required_queues;
    let known = q.status.as_str() == "up" || !q.missing.is_empty();
    let required_queues = q
        .queues
        .iter()
        .map(|name| RequiredQueue {
            name: name.clone(),
            state: match (q.missing.contains(name), known) {
                (true, _) => "missing",
                (false, true) => "present",
                (false, false) => "unknown",
            },
        })
        .collect();
    Ok(Charts {
        minutes: serde_json::to_string(&minutes).unwrap_or_default(),
        published_total: published.iter().sum(),
        published: serde_json::to_string(&published).unwrap_or_default(),
        undelivered: stats.undelivered,
        parked: stats.parked,
        required_queues,
    })
}
