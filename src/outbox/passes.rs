//! The background dispatcher's two passes over claimed rows: projections side by side, then
//! publishes pipelined on one channel; each pass marks what it delivered in one statement.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use futures_util::future::join_all;
use uuid::Uuid;

use super::{Dispatcher, Step};
use crate::store::{OutboxRow, StoreError};

/// Documents projected at the same time.
const PARALLEL_PROJECTIONS: usize = 16;

impl Dispatcher {
    /// Projects the current state of every document that has unprojected rows. Needs no
    /// ordering: the projection is the document's latest version, under a version guard.
    /// Stops after the first group with a MongoDB failure (the rest are given back).
    pub(super) async fn project_pass(
        &self,
        only_document: Option<Uuid>,
    ) -> Result<(usize, bool), StoreError> {
        let rows = self
            .store
            .claim_unprojected(only_document, self.settings.batch_size, self.claim_for())
            .await?;
        let Some(token) = rows.first().map(|r| r.claim_token) else {
            return Ok((0, false));
        };
        let mut ids: Vec<Uuid> = rows.iter().map(|r| r.document_id).collect();
        ids.dedup();
        ids.sort();
        ids.dedup();
        let docs: HashMap<Uuid, _> = self
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
                let doc = docs.get(id).ok_or_else(|| {
                    anyhow::anyhow!("outbox row of a document that does not exist")
                })?;
                self.mongo.project(doc).await
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
            self.stats
                .projected
                .fetch_add(ok.len() as u64, Ordering::Relaxed);
            self.store.mark_projected(&projected, token).await?;
            done += projected.len();
            if let Some((first, Err(e))) = group.iter().zip(&results).find(|(_, r)| r.is_err()) {
                // One failure is recorded (the first document's rows); the rest of the batch
                // is given back untouched, as if the pass had stopped there.
                let (failed, rest): (Vec<&OutboxRow>, Vec<&OutboxRow>) = rows
                    .iter()
                    .filter(|r| !projected.contains(&r.id))
                    .filter(|r| !ids[..n * PARALLEL_PROJECTIONS].contains(&r.document_id))
                    .partition(|r| r.document_id == *first);
                self.fail(&failed, Step::Projection, e).await?;
                let rest: Vec<i64> = rest.iter().map(|r| r.id).collect();
                self.store.unclaim(&rest, token).await?;
                return Ok((done, true));
            }
        }
        Ok((done, false))
    }

    /// Publishes the oldest projected, undone row of each document, all at once on one
    /// channel, and marks those the broker confirmed done. A failed row waits for its retry.
    pub(super) async fn publish_pass(
        &self,
        only_document: Option<Uuid>,
    ) -> Result<(usize, bool), StoreError> {
        let limit = if only_document.is_some() {
            1
        } else {
            self.settings.batch_size
        };
        let rows = self
            .store
            .claim_publishable(only_document, limit, self.claim_for())
            .await?;
        let results = join_all(rows.iter().map(|row| self.publish(row))).await;
        let delivered: Vec<i64> = rows
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(row, _)| row.id)
            .collect();
        self.store.mark_done(&delivered).await?;
        let mut failed = rows.iter().zip(&results).filter(|(_, r)| r.is_err());
        let Some((first, Err(e))) = failed.next() else {
            return Ok((rows.len(), false));
        };
        // One failure is recorded (the oldest row); the other failed rows are given back
        // untouched, as if the pass had stopped there.
        self.fail(&[first], Step::Publish, e).await?;
        let rest: Vec<i64> = failed.map(|(row, _)| row.id).collect();
        self.store.unclaim(&rest, first.claim_token).await?;
        Ok((rows.len(), true))
    }
}
