//! Projection updates, grouped: the updates that arrive while [`IN_FLIGHT`] `update`
//! commands are on their way to MongoDB go out together in the next one (up to
//! [`MAX_GROUP`] statements), so a group of concurrent transitions shares one command, one
//! acknowledgment at the write concern, and the server's work per command. Nothing waits
//! for a group to fill: a lone update goes out at once, alone, and groups form only while
//! MongoDB is busy. Two commands on their way, not one: FerretDB writes a command's
//! statements one after the other, so with one command at a time the projection was what
//! approvals waited for under load, with the CPU not all used (916 approvals/s at 64
//! connections; 988/s with two).
//!
//! Each caller still waits for its group's acknowledgment before it goes on (a projection is
//! written before its event is published). A command answers with how many statements
//! matched, not which: when every one matched, each was written; otherwise (a newer copy
//! stored, a document absent, a failed command, a write concern not met) every caller of
//! the group writes its copy alone ([`MongoProjection::project`]'s own path, which tells a
//! stale copy from an absent document and from one to retry); the same copy again matches
//! again. The statements are plain updates, not upserts: FerretDB names an upsert by its
//! rank among the upserts, not by its statement, and ends an unordered command at its
//! first error.
//!
//! [`MAX_GROUP`] stays small because FerretDB (1.24) keeps one PostgreSQL connection of its
//! pool of 50 for each statement of a command until the command ends, and one more for the
//! statement it writes: a command of 50 statements never ends and stops FerretDB for every
//! client (seen with groups of 64). Eight statements hold at most nine, two commands
//! eighteen, fewer than eight lone updates at once may (two each).
//!
//! [`MongoProjection::project`]: super::MongoProjection::project

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document as BsonDoc};
use mongodb::options::{ReadPreference, SelectionCriteria};
use mongodb::Database;
use tokio::sync::{mpsc, oneshot};

/// A command holds at most this many statements.
pub(super) const MAX_GROUP: usize = 8;

/// The most commands on their way at once.
pub(super) const IN_FLIGHT: usize = 2;

/// One update waiting for its command: the statement, and who waits for the answer.
struct Waiting {
    statement: BsonDoc,
    matched: oneshot::Sender<bool>,
}

/// How many commands were sent and how many updates they carried (per command: the
/// grouping; `kh_projection_group_*` in `/metrics`).
#[derive(Debug, Default)]
pub struct GroupFigures {
    pub commands: AtomicU64,
    pub updates: AtomicU64,
}

pub(super) struct Groups {
    target: Target,
    /// The writer task's inbox; the task starts with the first update.
    inbox: OnceLock<mpsc::UnboundedSender<Waiting>>,
    /// The runtime the writer runs on: the one the projection was built on (the process's
    /// main runtime), never an HTTP worker's, whose end at shutdown would drop a group.
    runtime: tokio::runtime::Handle,
    figures: Arc<GroupFigures>,
}

/// Where the commands go and how they are acknowledged.
#[derive(Clone)]
pub(super) struct Target {
    pub db: Database,
    pub collection: String,
    /// The collection's write concern, as the command document spells it.
    pub write_concern: Option<BsonDoc>,
    /// A command's whole bound.
    pub bound: Duration,
}

impl Groups {
    /// Called inside the runtime the writer is to run on.
    pub(super) fn new(target: Target) -> Self {
        Self {
            target,
            inbox: OnceLock::new(),
            runtime: tokio::runtime::Handle::current(),
            figures: Arc::default(),
        }
    }

    pub(super) fn figures(&self) -> Arc<GroupFigures> {
        self.figures.clone()
    }

    /// Sends `$set: fields` to the document `filter` selects, with whatever else is
    /// waiting; true when its group's every statement matched (so this one was written),
    /// false when the caller must write its copy alone.
    pub(super) async fn update(&self, filter: BsonDoc, fields: BsonDoc) -> bool {
        let (matched, answer) = oneshot::channel();
        let statement = doc! { "q": filter, "u": { "$set": fields } };
        let waiting = Waiting { statement, matched };
        // A send fails only once the writer is gone (at the runtime's end).
        self.inbox().send(waiting).is_ok() && answer.await.unwrap_or(false)
    }

    fn inbox(&self) -> &mpsc::UnboundedSender<Waiting> {
        self.inbox.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let writer = run(self.target.clone(), self.figures.clone(), rx);
            self.runtime.spawn(writer);
            tx
        })
    }
}

/// The writer: takes the first update that arrives and every one waiting behind it, sends
/// them in one command, answers each, and goes round again; at most [`IN_FLIGHT`]
/// commands on their way at once.
async fn run(
    target: Target,
    figures: Arc<GroupFigures>,
    mut inbox: mpsc::UnboundedReceiver<Waiting>,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    while let Some(first) = inbox.recv().await {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut group = Vec::with_capacity(MAX_GROUP);
        group.push(first);
        while group.len() < MAX_GROUP {
            match inbox.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        let (statements, answers): (Vec<BsonDoc>, Vec<_>) =
            group.into_iter().map(|w| (w.statement, w.matched)).unzip();
        figures.commands.fetch_add(1, Ordering::Relaxed);
        figures
            .updates
            .fetch_add(statements.len() as u64, Ordering::Relaxed);
        let target = target.clone();
        tokio::spawn(async move {
            let all_matched = send(&target, statements).await;
            for answer in answers {
                let _ = answer.send(all_matched);
            }
            drop(slot);
        });
    }
}

/// One `update` command of `statements`, unordered, at the collection's write concern; true
/// when it was acknowledged with every statement matched.
async fn send(target: &Target, statements: Vec<BsonDoc>) -> bool {
    let count = statements.len();
    let mut command = doc! {
        "update": &target.collection,
        "updates": statements,
        "ordered": false,
    };
    if let Some(w) = &target.write_concern {
        command.insert("writeConcern", w.clone());
    }
    let sent = target
        .db
        .run_command(command)
        .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary));
    match tokio::time::timeout(target.bound, sent).await {
        Ok(Ok(reply)) => all_matched(&reply, count),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "grouped projection update failed; each is written alone");
            false
        }
        Err(_) => false,
    }
}

/// The reply says every one of `count` statements matched, with no write error and no
/// write concern error.
fn all_matched(reply: &BsonDoc, count: usize) -> bool {
    let n = match reply.get("n") {
        Some(Bson::Int32(n)) => usize::try_from(*n).ok(),
        Some(Bson::Int64(n)) => usize::try_from(*n).ok(),
        _ => None,
    };
    let ok = matches!(reply.get("ok"), Some(Bson::Double(v)) if *v == 1.0)
        || matches!(reply.get("ok"), Some(Bson::Int32(1)));
    ok && n == Some(count)
        && !reply.contains_key("writeErrors")
        && !reply.contains_key("writeConcernError")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_written_only_when_every_statement_matched() {
        assert!(all_matched(&doc! { "n": 3, "nModified": 3, "ok": 1.0 }, 3));
        assert!(all_matched(
            &doc! { "n": 3_i64, "nModified": 0, "ok": 1 },
            3
        ));
        assert!(
            !all_matched(&doc! { "n": 2, "ok": 1.0 }, 3),
            "one did not match"
        );
        assert!(!all_matched(&doc! { "n": 3, "ok": 0.0 }, 3), "not ok");
        assert!(!all_matched(&doc! { "ok": 1.0 }, 3), "no count");
        let errors = doc! { "ok": 1.0, "writeErrors": [ { "index": 0, "code": 11000 } ] };
        assert!(
            !all_matched(&errors, 1),
            "a write error (FerretDB gives no count then)"
        );
        let concern = doc! { "n": 3, "ok": 1.0, "writeConcernError": { "code": 64 } };
        assert!(!all_matched(&concern, 3), "not acknowledged at the concern");
    }
}
