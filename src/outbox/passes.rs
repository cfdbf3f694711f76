//! The dispatcher's two passes over taken rows, over a `Delivery`:
//! projections side by side, then publishes pipelined on one channel; each pass marks what
//! it delivered in one statement.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::delivery::Delivery;
use super::fault::{Fault, Phase};
use crate::store::{OutboxRow, StoreError};

/// What a pass did: rows delivered or tried, and whether a dependency was down.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Pass {
    pub(super) done: usize,
    pub(super) down: bool,
}

/// Documents projected at the same time.
const PARALLEL_PROJECTIONS: usize = 16;

/// Projects the current state of every document that has unprojected rows. Needs no
/// ordering: the projection is the document's latest version, under a version guard.
/// Stops after the first group with a failure (the rest of the batch is given back).
pub(super) async fn project_pass(
    d: &Delivery,
    only_document: Option<Uuid>,
) -> Result<Pass, StoreError> {
    let rows = d
        .store
        .take_unprojected(only_document, d.settings.batch_size, d.take_for())
        .await?;
    let Some(token) = rows.first().map(|r| r.ticket) else {
        return Ok(Pass::default());
    };
    let mut ids: Vec<Uuid> = rows.iter().map(|r| r.document_id).collect();
    ids.sort();
    ids.dedup();
    let docs: HashMap<Uuid, _> = d
        .store
        .documents(&ids)
        .await?
        .into_iter()
        .map(|d| (d.id, d))
        .collect();
    let docs = &docs;
    let mut done = 0;
    for (n, group) in ids.chunks(PARALLEL_PROJECTIONS).enumerate() {
        let results = join_all(group.iter().map(|id| async move {
            match docs.get(id) {
                Some(doc) => d.project(doc).await,
                None => Err(Fault::Refused(Phase::Projection, "no such document".into())),
            }
        }))
        .await;
        let ok: Vec<&Uuid> = group
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(id, _)| id)
            .collect();
        let projected: Vec<i64> = rows
            .iter()
            .filter(|r| ok.contains(&&r.document_id))
            .map(|r| r.id)
            .collect();
        d.store.mark_projected(&projected, token).await?;
        done += projected.len();
        if let Some((first, Err(fault))) = group.iter().zip(&results).find(|(_, r)| r.is_err()) {
            // One failure is recorded (the first document's rows); the rest of the batch
            // is given back untouched, as if the pass had stopped there.
            let (failed, rest): (Vec<&OutboxRow>, Vec<&OutboxRow>) = rows
                .iter()
                .filter(|r| !projected.contains(&r.id))
                .filter(|r| !ids[..n * PARALLEL_PROJECTIONS].contains(&r.document_id))
                .partition(|r| r.document_id == *first);
            d.fail(&failed, fault).await?;
            let rest: Vec<i64> = rest.iter().map(|r| r.id).collect();
            d.store.put_back(&rest, token).await?;
            return Ok(Pass {
                done,
                down: fault.is_down(),
            });
        }
    }
    Ok(Pass { done, down: false })
}

/// Publishes the document's oldest undone row if it is projected and due (the inline
/// path; see [`publish_rows`]).
pub(super) async fn publish_pass(d: &Delivery, document_id: Uuid) -> Result<Pass, StoreError> {
    let rows = d
        .store
        .take_publishable(Some(document_id), 1, d.take_for())
        .await?;
    let (pass, delivered) = publish_rows(d, rows).await;
    d.store.mark_done(&delivered).await?;
    pass
}

/// The background publish pass's work in flight between passes: the next batch, taken while
/// this one is published, and the done marks of the last batch, written while this one is.
#[derive(Default)]
pub(super) struct Pipeline {
    ahead: Option<JoinHandle<Result<Vec<OutboxRow>, StoreError>>>,
    marking: Option<JoinHandle<Result<(), StoreError>>>,
}

impl Pipeline {
    /// Waits for the marks in flight: once this returns, every row this pipeline delivered
    /// is marked done (or the error says why not; they are delivered again after their
    /// lease).
    async fn settle_marks(&mut self) -> Result<(), StoreError> {
        match self.marking.take() {
            Some(marking) => marking
                .await
                .map_err(|e| anyhow::anyhow!("mark task: {e}"))?,
            None => Ok(()),
        }
    }

    /// Ends the pipeline (the loop stops): the marks in flight written, the batch taken
    /// ahead given back.
    pub(super) async fn close(mut self, d: &Delivery) {
        if let Err(e) = self.settle_marks().await {
            tracing::warn!(error = %e, "could not mark delivered outbox rows; dispatchers deliver them again after their lease");
        }
        give_back(d, self.ahead.take()).await;
    }
}

/// The background publish pass: publishes the batch taken ahead (or takes one now),
/// and while a full batch is published, takes the next, so that draining a backlog
/// does not wait for a take between batches. The next take cannot reach a later row
/// of a document in this batch: that document's oldest undone row is this batch's, and
/// it is taken (and stays so until its done mark, written while the next batch goes out).
/// Rows taken ahead of a pass that found the broker down go back.
pub(super) async fn publish_pass_ahead(
    d: &Arc<Delivery>,
    pipeline: &mut Pipeline,
) -> Result<Pass, StoreError> {
    let rows = match pipeline.ahead.take() {
        Some(next) => next
            .await
            .map_err(|e| anyhow::anyhow!("take task: {e}"))??,
        None => take_batch(d).await?,
    };
    let full = rows.len() as i64 >= d.settings.batch_size;
    if full && d.publisher.is_connected().await {
        let this = d.clone();
        pipeline.ahead = Some(tokio::spawn(async move { take_batch(&this).await }));
    }
    let (pass, delivered) = publish_rows(d, rows).await;
    // The last batch's marks went on while this one was published: at most one batch's
    // marks in flight. This batch's marks go out even when the last batch's failed.
    let settled = pipeline.settle_marks().await;
    if !delivered.is_empty() {
        let store = d.store.clone();
        pipeline.marking = Some(tokio::spawn(
            async move { store.mark_done(&delivered).await },
        ));
    }
    settled?;
    let pass = pass?;
    if pass.down {
        give_back(d, pipeline.ahead.take()).await;
    }
    Ok(pass)
}

/// Puts back the rows of a batch taken ahead that will not be published now.
pub(super) async fn give_back(
    d: &Delivery,
    ahead: Option<JoinHandle<Result<Vec<OutboxRow>, StoreError>>>,
) {
    let Some(next) = ahead else { return };
    let Ok(Ok(rows)) = next.await else { return };
    if let Some(token) = rows.first().map(|r| r.ticket) {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        if let Err(e) = d.store.put_back(&ids, token).await {
            tracing::warn!(rows = ids.len(), error = %e, "could not give back rows taken ahead; they are due again when their hold ends");
        }
    }
}

async fn take_batch(d: &Delivery) -> Result<Vec<OutboxRow>, StoreError> {
    d.store
        .take_publishable(None, d.settings.batch_size, d.take_for())
        .await
}

/// Publishes the oldest projected, undone row of each document, all at once on one
/// channel. A refused row waits for its own retry; if the broker is down, every row that
/// failed goes back as it was. Returns what the pass did and the rows the broker
/// confirmed, for the caller to mark done.
async fn publish_rows(d: &Delivery, rows: Vec<OutboxRow>) -> (Result<Pass, StoreError>, Vec<i64>) {
    // Without a live connection, one publish first: if the broker is down, the rest of
    // the batch does not queue up behind one failing connect each.
    let probe = usize::from(!d.publisher.is_connected().await).min(rows.len());
    let mut results = join_all(rows[..probe].iter().map(|row| d.publish(row))).await;
    if let Some(Err(fault)) = results.first().filter(|r| r.is_err()) {
        if fault.is_down() {
            let rows: Vec<&OutboxRow> = rows.iter().collect();
            let down = Pass {
                done: 0,
                down: true,
            };
            return (d.fail(&rows, fault).await.map(|()| down), Vec::new());
        }
    }
    results.extend(join_all(rows[probe..].iter().map(|row| d.publish(row))).await);
    let delivered: Vec<i64> = rows
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.is_ok())
        .map(|(row, _)| row.id)
        .collect();
    (set_aside_failed(d, &rows, &results).await, delivered)
}

/// The rows the broker refused each get a failed attempt; those it never took (it is
/// down) go back together, in one statement, under the first such fault.
async fn set_aside_failed(
    d: &Delivery,
    rows: &[OutboxRow],
    results: &[Result<(), Fault>],
) -> Result<Pass, StoreError> {
    let mut set_aside: Vec<&OutboxRow> = Vec::new();
    let mut outage = None;
    for (row, result) in rows.iter().zip(results) {
        match result {
            Err(fault) if fault.is_down() => {
                set_aside.push(row);
                outage.get_or_insert(fault);
            }
            Err(refused) => d.fail(&[row], refused).await?,
            Ok(()) => {}
        }
    }
    if let Some(fault) = outage {
        d.fail(&set_aside, fault).await?;
    }
    Ok(Pass {
        done: rows.len(),
        down: outage.is_some(),
    })
}
