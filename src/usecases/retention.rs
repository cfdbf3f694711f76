//! Retention: every `outbox.purge_interval_ms` each instance tries the purge lock; the one
//! that gets it deletes delivered outbox rows older than `outbox.retention_hours` (history
//! replays read them until then) and expired idempotency records, in batches of
//! `outbox.purge_batch`, `outbox.purge_pause_ms` apart, until a batch comes back short.
//! The others skip that round. A batch is one short statement, so a large backlog never
//! meets `statement_timeout` as one unbatched DELETE does: it is worked off over as many
//! batches as it takes. A batch that meets it all the same (a server loaded for a moment)
//! is tried again at half the size, up to 8 times in a row.
//!
//! Never deletes an undelivered row (parked ones included).

use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{IntCounterVec, Opts};
use tokio_util::sync::CancellationToken;

use crate::outbox::OutboxSettings;
use crate::store::{cancelled_by_statement_timeout, PgStore, PurgeSession, StoreError};

/// Statements in a row cancelled by `statement_timeout` (each at half the rows of the one
/// before) after which a round gives up until the next.
const MAX_TIMEOUTS: u32 = 8;

/// One table's progress in a round: its batch size (halved after a statement that met
/// `statement_timeout`, for the rest of the round), whether rows may be left, and how many
/// statements in a row were cancelled.
struct Table {
    name: &'static str,
    limit: i64,
    left: bool,
    timeouts: u32,
}

impl Table {
    fn new(name: &'static str, limit: i64) -> Self {
        Self {
            name,
            limit,
            left: true,
            timeouts: 0,
        }
    }

    /// What one statement did: rows deleted, or 0 after a timeout it may survive.
    fn note(&mut self, done: Result<u64, StoreError>) -> Result<u64, StoreError> {
        match done {
            Ok(n) => {
                self.timeouts = 0;
                self.left = n as i64 >= self.limit;
                Ok(n)
            }
            Err(e) if cancelled_by_statement_timeout(&e) && self.timeouts < MAX_TIMEOUTS => {
                self.timeouts += 1;
                self.limit = (self.limit / 2).max(1);
                tracing::warn!(
                    table = self.name,
                    batch = self.limit,
                    "a purge statement met statement_timeout: going on with smaller batches"
                );
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeRound {
    /// Another session holds the purge lock: nothing was deleted here.
    Skipped,
    /// Rows deleted, and the statements it took.
    Ran {
        outbox_rows: u64,
        idempotency_records: u64,
        /// Webhook deliveries delivered or failed before the outbox's retention.
        webhook_deliveries: u64,
        batches: u64,
    },
}

/// How the purger runs (`[outbox]`'s retention keys).
#[derive(Debug, Clone, Copy)]
pub struct RetentionSettings {
    pub keep: Duration,
    pub every: Duration,
    pub batch: i64,
    pub pause: Duration,
}

impl RetentionSettings {
    pub fn from_outbox(s: &OutboxSettings) -> Self {
        Self {
            keep: s.retention(),
            every: s.purge_interval,
            batch: s.purge_batch,
            pause: s.purge_pause,
        }
    }
}

/// Rows purged and rounds run, for `/metrics`.
pub struct RetentionStats {
    purged: IntCounterVec,
    rounds: IntCounterVec,
}

impl RetentionStats {
    fn new() -> Self {
        Self {
            purged: IntCounterVec::new(
                Opts::new(
                    "kh_retention_purged_total",
                    "Rows deleted by the purger, by table (outbox, idempotency_keys, webhook_deliveries)",
                ),
                &["table"],
            )
            .expect("valid metric"),
            rounds: IntCounterVec::new(
                Opts::new(
                    "kh_retention_rounds_total",
                    "Purge rounds by outcome: ran (held the purge lock), skipped (another \
                     instance held it), failed",
                ),
                &["outcome"],
            )
            .expect("valid metric"),
        }
    }

    /// The collectors to register with a Prometheus registry.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![Box::new(self.purged.clone()), Box::new(self.rounds.clone())]
    }
}

pub struct Retention {
    store: PgStore,
    settings: RetentionSettings,
    stats: RetentionStats,
}

impl Retention {
    pub fn new(store: PgStore, settings: RetentionSettings) -> Self {
        Self {
            store,
            settings,
            stats: RetentionStats::new(),
        }
    }

    pub fn stats(&self) -> &RetentionStats {
        &self.stats
    }

    /// One round: the purge lock, then both tables batch by batch (stopping early at
    /// `shutdown`), then the lock released with the session.
    pub async fn run_once(&self, shutdown: &CancellationToken) -> Result<PurgeRound, StoreError> {
        let Some(mut session) = self.store.purge_session().await? else {
            self.stats.rounds.with_label_values(&["skipped"]).inc();
            return Ok(PurgeRound::Skipped);
        };
        let purged = self.purge(&mut session, shutdown).await;
        session.close().await;
        let outcome = if purged.is_ok() { "ran" } else { "failed" };
        self.stats.rounds.with_label_values(&[outcome]).inc();
        purged
    }

    async fn purge(
        &self,
        session: &mut PurgeSession,
        shutdown: &CancellationToken,
    ) -> Result<PurgeRound, StoreError> {
        let keep = self.settings.keep;
        let mut outbox = Table::new("outbox", self.settings.batch);
        let mut keys = Table::new("idempotency_keys", self.settings.batch);
        let mut hooks = Table::new("webhook_deliveries", self.settings.batch);
        let (mut outbox_rows, mut idempotency_records, mut webhook_deliveries) = (0, 0, 0);
        let mut batches = 0;
        while (outbox.left || keys.left || hooks.left) && !shutdown.is_cancelled() {
            if outbox.left {
                let n = outbox.note(session.delete_delivered(keep, outbox.limit).await)?;
                self.stats.purged.with_label_values(&["outbox"]).inc_by(n);
                (outbox_rows, batches) = (outbox_rows + n, batches + 1);
            }
            if keys.left {
                let n = keys.note(session.delete_expired_keys(keys.limit).await)?;
                let table = self.stats.purged.with_label_values(&["idempotency_keys"]);
                table.inc_by(n);
                (idempotency_records, batches) = (idempotency_records + n, batches + 1);
            }
            if hooks.left {
                let n = hooks.note(session.delete_old_deliveries(keep, hooks.limit).await)?;
                let table = self.stats.purged.with_label_values(&["webhook_deliveries"]);
                table.inc_by(n);
                (webhook_deliveries, batches) = (webhook_deliveries + n, batches + 1);
            }
            if outbox.left || keys.left || hooks.left {
                tokio::select! {
                    _ = shutdown.cancelled() => {}
                    _ = tokio::time::sleep(self.settings.pause) => {}
                }
            }
        }
        Ok(PurgeRound::Ran {
            outbox_rows,
            idempotency_records,
            webhook_deliveries,
            batches,
        })
    }

    /// The purger: a round every `outbox.purge_interval_ms`, until `shutdown`.
    pub async fn run(&self, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.settings.every) => {}
            }
            match self.run_once(&shutdown).await {
                Ok(PurgeRound::Ran {
                    outbox_rows,
                    idempotency_records,
                    webhook_deliveries,
                    batches,
                }) if outbox_rows + idempotency_records + webhook_deliveries > 0 => {
                    tracing::info!(
                        outbox_rows,
                        idempotency_records,
                        webhook_deliveries,
                        batches,
                        "purged delivered outbox rows, expired idempotency records and old webhook deliveries"
                    );
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "purge round failed; the next one resumes"),
            }
        }
    }
}
