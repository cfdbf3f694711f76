//! The re-verification scheduler: every `every`, on each instance, it opens the
//! re-verifications that came due and expires the documents nobody re-verified by their
//! deadline (`store::reverify`: each once, whichever instance gets to it), a batch at a
//! time until none is left.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::{reverify::SCHEDULER, Access, UserId};
use crate::store::{PgStore, WriteContext};

/// Which of the scheduler's two passes.
#[derive(Debug, Clone, Copy)]
enum Pass {
    Open,
    Expire,
}

/// Runs the scheduler every `every`, at most `batch` documents per transaction, until
/// `stop`.
pub async fn schedule_reverifications(
    store: PgStore,
    every: Duration,
    batch: i64,
    stop: CancellationToken,
) {
    let actor = UserId::parse(SCHEDULER).expect("a valid user id");
    let access = Access::platform_admin();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let ctx = WriteContext::background(&actor, &access, "reverify-scheduler");
        for pass in [Pass::Open, Pass::Expire] {
            run(&store, pass, batch, &ctx).await;
        }
    }
}

/// Runs `pass` a batch at a time until a batch comes back short.
async fn run(store: &PgStore, pass: Pass, batch: i64, ctx: &WriteContext<'_>) {
    loop {
        // Each pass is a trace of its own (no request started it): the events it writes
        // carry that trace.
        let span = tracing::debug_span!(parent: None, "reverify.pass", pass = ?pass);
        let work = async {
            match pass {
                Pass::Open => store.open_due_reverifications(batch, ctx).await,
                Pass::Expire => store.expire_lapsed_reverifications(batch, ctx).await,
            }
        };
        match tracing::Instrument::instrument(work, span).await {
            Ok(0) => return,
            Ok(n) => {
                tracing::info!(documents = n, pass = ?pass, "re-verification scheduler");
                if n < batch as u64 {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, pass = ?pass, "re-verification scheduler pass failed");
                return;
            }
        }
    }
}
