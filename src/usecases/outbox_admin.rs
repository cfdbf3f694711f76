//! What admins do with the outbox: list the rows that are stuck (parked, or failing and
//! not parked yet), put a parked row back in line, or skip it so that its document's later
//! events go. Every action is audited with the admin's id, in the statement that makes it,
//! and recorded under the request's idempotency key, in the same transaction.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};

use super::commit::commit;
use super::error::Error;
use crate::domain::UserId;
use crate::store::{
    HeldKey, OutboxAction, OutboxFilter, OutboxRecord, PgStore, StoreError, StoreFailure,
};

/// Why an admin action did not happen; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no outbox row {0}")]
    NotFound(i64),
    /// Only a parked row can be retried or skipped; the row's state is given.
    #[error("outbox row {0} is {1}, not parked")]
    NotParked(i64, &'static str),
    /// A retry with the same idempotency key took it over; the action was rolled back.
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StoreFailure for AdminError {
    fn read_only(&self) -> bool {
        matches!(self, AdminError::Store(e) if e.read_only())
    }
}

impl From<Error> for AdminError {
    /// What [`commit`] answers without a lease: the key taken over, or the store failed.
    fn from(e: Error) -> Self {
        match e {
            Error::KeyTakenOver => AdminError::KeyTakenOver,
            Error::Store(s) => AdminError::Store(s),
            other => AdminError::Store(StoreError::Unexpected(anyhow::anyhow!(
                "an admin action's commit: {other}"
            ))),
        }
    }
}

/// Delivery over every instance (see `OutboxAdmin::stats`).
#[derive(Debug, Clone, Copy)]
pub struct OutboxStats {
    pub undelivered: i64,
    pub oldest_undelivered_age: Duration,
    pub parked: i64,
    pub oldest_parked_age: Duration,
    pub delivered_last_minute: i64,
}

pub struct OutboxAdmin {
    store: PgStore,
    /// What the delivery chart keeps between calls (see `published_per_minute`).
    chart: Mutex<ChartMemory>,
}

/// Events published per minute: (the minute's start, how many).
type Series = Vec<(DateTime<Utc>, i64)>;

/// How long a counted chart is shown again: the operator page's refresh.
const CHART_FRESH: Duration = Duration::from_secs(5);

impl OutboxAdmin {
    pub fn new(store: PgStore) -> Self {
        Self {
            store,
            chart: Mutex::new(ChartMemory::default()),
        }
    }

    /// Up to `limit` rows in `filter`, oldest first, after the row `after`.
    pub async fn list(
        &self,
        filter: OutboxFilter,
        after: Option<i64>,
        limit: i64,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        self.store.outbox_rows(filter, after, limit).await
    }

    /// What is waiting, what is parked, and what went out in the last minute.
    pub async fn stats(&self) -> Result<OutboxStats, StoreError> {
        let (undelivered, age) = self.store.backlog().await?;
        let (parked, parked_age) = self.store.parked().await?;
        let delivered = self.store.delivered_last_minute().await?;
        let secs = |s: f64| Duration::from_secs_f64(s.max(0.0));
        Ok(OutboxStats {
            undelivered,
            oldest_undelivered_age: secs(age),
            parked,
            oldest_parked_age: secs(parked_age),
            delivered_last_minute: delivered,
        })
    }

    /// Events published in each of the last `minutes` minutes, over every instance. A
    /// minute that ended more than a minute ago is settled (every row marked done in it
    /// has committed): it is counted once and kept, so that the operator page's refresh
    /// every 5 s counts the two latest minutes only, not an hour of rows. Those two are
    /// counted at most once per [`CHART_FRESH`] however many people watch the page: under
    /// load they hold tens of thousands of rows (20 ms to count after a minute at 800
    /// approvals a second), and the page is that old anyway between its refreshes.
    pub async fn published_per_minute(&self, minutes: i32) -> Result<Series, StoreError> {
        let chart = || self.chart.lock().unwrap_or_else(|e| e.into_inner());
        let from = {
            let memory = chart();
            if let Some(series) = memory.fresh(minutes) {
                return Ok(series);
            }
            memory.next()
        };
        let mut series = self.store.published_per_minute(minutes, from).await?;
        chart().merge(&mut series, from);
        Ok(series)
    }

    /// Retries or skips the parked row `id` for `admin`; returns the row as it is now. With
    /// `held`, the row is recorded under that idempotency key in the action's transaction.
    pub async fn act(
        &self,
        id: i64,
        action: OutboxAction,
        admin: &UserId,
        request_id: &str,
        held: Option<&HeldKey>,
    ) -> Result<OutboxRecord, AdminError> {
        let store = &self.store;
        let acted = store
            .bounded(async {
                let uncommitted = store
                    .write_outbox_action(id, action, admin.as_str(), request_id)
                    .await?;
                match uncommitted {
                    Some(uncommitted) => {
                        Ok::<_, AdminError>(Some(commit(uncommitted, None, held).await?.value))
                    }
                    None => Ok(None),
                }
            })
            .await?;
        if let Some(row) = acted {
            tracing::warn!(outbox_id = id, document_id = %row.document_id, event_id = %row.event_id, action = action.as_str(), admin = admin.as_str(), "parked outbox row handled by an admin");
            return Ok(row);
        }
        match self.store.outbox_row(id).await? {
            None => Err(AdminError::NotFound(id)),
            Some(row) => Err(AdminError::NotParked(id, row.state())),
        }
    }
}

/// What the delivery chart keeps: the minutes that can no longer change, by their start,
/// and the last series counted, with when.
#[derive(Debug, Default)]
struct ChartMemory {
    settled: BTreeMap<DateTime<Utc>, i64>,
    last: Option<(Instant, Series)>,
}

impl ChartMemory {
    /// The last series counted, while it is fresh ([`CHART_FRESH`]) and of `minutes`.
    fn fresh(&self, minutes: i32) -> Option<Series> {
        let (at, series) = self.last.as_ref()?;
        (at.elapsed() < CHART_FRESH && series.len() == minutes as usize).then(|| series.clone())
    }

    /// The first minute still to count: the one after the last settled one.
    fn next(&self) -> Option<DateTime<Utc>> {
        self.settled
            .keys()
            .next_back()
            .map(|m| *m + TimeDelta::minutes(1))
    }

    /// Fills the minutes of `series` before `from` from the settled ones, keeps the
    /// minutes it counted that have settled since (those before the one before the current
    /// minute), forgets those that left the window, and remembers `series` as the last.
    fn merge(&mut self, series: &mut Series, from: Option<DateTime<Utc>>) {
        let (Some(first), Some(current)) =
            (series.first().map(|m| m.0), series.last().map(|m| m.0))
        else {
            return;
        };
        let settled_before = current - TimeDelta::minutes(1);
        for (minute, events) in series.iter_mut() {
            if from.is_some_and(|f| *minute < f) {
                *events = self.settled.get(minute).copied().unwrap_or(0);
            } else if *minute < settled_before {
                self.settled.insert(*minute, *events);
            }
        }
        self.settled.retain(|m, _| *m >= first);
        self.last = Some((Instant::now(), series.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute(m: i64) -> DateTime<Utc> {
        // 1_800_000_000 s is a whole minute.
        DateTime::from_timestamp(1_800_000_000 + m * 60, 0).unwrap()
    }

    #[test]
    fn settled_minutes_are_counted_once_and_the_two_latest_every_time() {
        let mut s = ChartMemory::default();
        // First call: everything counted; minutes 0..=2 settle, 3 and 4 (current) do not.
        let mut series: Vec<_> = (0..5).map(|m| (minute(m), 10 + m)).collect();
        s.merge(&mut series, None);
        assert_eq!(s.next(), Some(minute(3)));
        // Next call, a minute later: the store counted from minute 3 only (0 before it).
        let mut series: Vec<_> = (1..6)
            .map(|m| (minute(m), if m >= 3 { 20 + m } else { 0 }))
            .collect();
        s.merge(&mut series, Some(minute(3)));
        let events: Vec<i64> = series.iter().map(|(_, n)| *n).collect();
        assert_eq!(
            events,
            vec![11, 12, 23, 24, 25],
            "settled from the cache, the rest counted"
        );
        // Minute 0 left the window; minute 3 settled.
        assert_eq!(s.settled.keys().next(), Some(&minute(1)));
        assert_eq!(s.next(), Some(minute(4)));
    }

    #[test]
    fn the_last_series_is_shown_again_while_fresh_and_of_the_same_span() {
        let mut s = ChartMemory::default();
        assert_eq!(s.fresh(5), None, "nothing counted yet");
        let mut series: Vec<_> = (0..5).map(|m| (minute(m), m)).collect();
        s.merge(&mut series, None);
        assert_eq!(s.fresh(5), Some(series));
        assert_eq!(s.fresh(60), None, "another span is counted");
    }
}
