//! Sessions that cannot write: a standby, or a primary demoted behind a proxy, answers
//! SQLSTATE 25006 to a write. A new session is checked once when it is made
//! ([`refuse_read_only`]); a read-only answer later condemns every session opened before it
//! ([`ReadOnlySeen`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::PgConnection;

/// Refuses a new session whose transactions would be read-only (`transaction_read_only`
/// is on in a hot standby and under `default_transaction_read_only`): one round trip, when
/// the connection is made, never on reuse.
pub(super) async fn refuse_read_only(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let read_only = sqlx::query_scalar!(
        r#"SELECT current_setting('transaction_read_only') = 'on' AS "read_only!""#
    )
    .fetch_one(conn)
    .await?;
    if read_only {
        return Err(sqlx::Error::Protocol(
            "the server's sessions are read-only (a standby or a demoted primary)".into(),
        ));
    }
    Ok(())
}

/// When a session of the pool last answered that it is read-only (SQLSTATE 25006, as a
/// demoted primary behind a proxy does). Every connection opened until then is closed
/// rather than handed out again, on release and before reuse: the ones on the read-only
/// server are all suspect, and telling them apart would cost a round trip each. The
/// connection that answered may be released before its error is noted here; the check
/// before reuse closes it then. Costs an atomic load per acquire and release.
#[derive(Debug)]
pub(super) struct ReadOnlySeen {
    since: Instant,
    /// Nanoseconds after `since`, plus one, of the last read-only answer; 0: none yet.
    at: AtomicU64,
}

impl ReadOnlySeen {
    pub(super) fn new() -> Self {
        Self {
            since: Instant::now(),
            at: AtomicU64::new(0),
        }
    }

    pub(super) fn note(&self) {
        let now = self.since.elapsed().as_nanos() as u64 + 1;
        if self.at.fetch_max(now, Ordering::Relaxed) == 0 {
            tracing::warn!(
                "a postgresql session is read-only: closing the pool's older connections"
            );
        }
    }

    /// Whether a connection `age` old was opened before the last read-only answer.
    pub(super) fn condemns(&self, age: Duration) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        let opened = self.since.elapsed().saturating_sub(age).as_nanos() as u64 + 1;
        at != 0 && opened <= at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_answer_condemns_the_connections_opened_before_it() {
        let seen = ReadOnlySeen::new();
        std::thread::sleep(Duration::from_millis(2));
        assert!(!seen.condemns(Duration::from_millis(1)), "nothing seen yet");
        seen.note();
        assert!(
            seen.condemns(Duration::from_millis(1)),
            "opened before the answer"
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(!seen.condemns(Duration::from_millis(1)), "opened after it");
        assert!(seen.condemns(Duration::from_millis(10)), "opened before it");
    }
}
