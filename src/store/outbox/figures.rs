//! Delivery over time, read from the retained outbox rows, so every instance draws the same
//! picture: events published per minute.

use chrono::{DateTime, Utc};

use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// Every minute of the last `minutes` minutes, the current one last (it is still
    /// running), with the events published in it: (the minute's start, events), by the
    /// database's clock. Only minutes from `from` on are counted (the others come back as
    /// 0, for a caller that holds them already). Read by `done_at` through
    /// `outbox_done_at`; skipped rows and rows with no event (published_at unset) do not
    /// count.
    pub async fn published_per_minute(
        &self,
        minutes: i32,
        from: Option<DateTime<Utc>>,
    ) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError> {
        let rows = sqlx::query!(
            r#"WITH span AS (
                 SELECT m FROM generate_series(
                   date_trunc('minute', now()) - make_interval(mins => $1 - 1),
                   date_trunc('minute', now()), interval '1 minute') AS m),
               done AS (
                 SELECT date_trunc('minute', done_at) AS m, count(*) AS n FROM outbox
                 WHERE done_at IS NOT NULL AND published_at IS NOT NULL
                   AND done_at >= GREATEST(
                     date_trunc('minute', now()) - make_interval(mins => $1 - 1),
                     COALESCE($2, '-infinity'::timestamptz))
                 GROUP BY 1)
               SELECT span.m AS "minute!", COALESCE(done.n, 0) AS "events!"
               FROM span LEFT JOIN done ON done.m = span.m ORDER BY span.m"#,
            minutes,
            from
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(rows.into_iter().map(|r| (r.minute, r.events)).collect())
    }
}
