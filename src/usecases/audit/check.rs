//! The audit chain's check, as operators run it (`GET /api/v1/admin/audit/verify`, and the
//! `kh-review audit verify` command): every chain, or one document's, against their heads
//! in PostgreSQL and against the latest checkpoint (`report`), which names a
//! chain rewound or gone. Without the checkpoint store the rest is still checked, and the
//! report says what was not.
//!
//! One scan at a time per instance and per scope (every chain, or one document's): a
//! caller that asks while a scan of the same scope runs waits for that scan and gets its
//! result, so repeated calls cannot tie up the pool with scans of their own. The scan runs
//! in a task of its own, so a caller that goes away (a client that hangs up) never cancels
//! it for the others. It must never start a second scan of a scope while one runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::{BoxFuture, FutureExt, Shared};
use prometheus::core::Collector;
use prometheus::IntCounterVec;
use uuid::Uuid;

use super::report::{against_checkpoint, AuditReport};
use crate::store::mongo::CheckpointStore;
use crate::store::{PgStore, StoreError};
use crate::usecases::test_hooks::TestHooks;

/// Why a check did not run.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("no document {0}")]
    NoSuchDocument(Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AuditError {
    /// The same failure for another caller of a shared scan (see [`StoreError::copy`]).
    fn copy(&self) -> Self {
        match self {
            AuditError::NoSuchDocument(id) => AuditError::NoSuchDocument(*id),
            AuditError::Store(e) => AuditError::Store(e.copy()),
        }
    }
}

/// What one scan found, as every caller that shares it receives it.
type Outcome = Result<AuditReport, Arc<AuditError>>;
type Scan = Shared<BoxFuture<'static, Outcome>>;

/// The scans running now, by scope (None: every chain), each with its number.
type Running = Arc<Mutex<HashMap<Option<Uuid>, (u64, Scan)>>>;

pub struct AuditService {
    store: PgStore,
    checkpoints: CheckpointStore,
    running: Running,
    /// Numbers the scans, so that one ending leaves `running` only if it is still there.
    numbered: AtomicU64,
    /// Scans started, by scope (`all`, `document`): what `/metrics` shows.
    scans: IntCounterVec,
}

impl AuditService {
    pub fn new(store: PgStore, checkpoints: CheckpointStore) -> Self {
        let opts = prometheus::Opts::new(
            "kh_audit_verify_scans_total",
            "Audit verify scans started, by scope (all, document); callers that asked while \
             a scan of the same scope ran shared it and started none",
        );
        Self {
            store,
            checkpoints,
            running: Running::default(),
            numbered: AtomicU64::new(0),
            scans: IntCounterVec::new(opts, &["scope"]).expect("valid metric"),
        }
    }

    /// The collectors to register with a Prometheus registry.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![Box::new(self.scans.clone())]
    }

    /// Checks the chain of `document` (which must exist), or every chain: the result of the
    /// scan of that scope running now, or of one started for this call. `hooks` apply to
    /// a scan this call starts (a test's pause before it reads).
    pub async fn verify(
        &self,
        document: Option<Uuid>,
        hooks: TestHooks,
    ) -> Result<AuditReport, AuditError> {
        let scan = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            let (_, scan) = running.entry(document).or_insert_with(|| {
                let n = self.numbered.fetch_add(1, Ordering::Relaxed);
                (n, self.start(document, n, hooks))
            });
            scan.clone()
        };
        scan.await.map_err(|e| e.copy())
    }

    /// A scan of `document`'s scope in a task of its own, numbered `n`; it leaves
    /// `running` when it ends, so that the next call starts a fresh one.
    fn start(&self, document: Option<Uuid>, n: u64, hooks: TestHooks) -> Scan {
        let scope = if document.is_some() {
            "document"
        } else {
            "all"
        };
        self.scans.with_label_values(&[scope]).inc();
        let (store, running) = (self.store.clone(), self.running.clone());
        let checkpoints = self.checkpoints.clone();
        let task = tokio::spawn(async move {
            // Leaves `running` however the scan ends (a panic included).
            let _leave = Leave {
                running,
                document,
                n,
            };
            if let Some(pause) = hooks.pause_before_scan {
                tokio::time::sleep(pause).await;
            }
            scan(&store, &checkpoints, document).await.map_err(Arc::new)
        });
        async move {
            task.await.unwrap_or_else(|e| {
                let e = anyhow::anyhow!("the audit scan's task ended: {e}");
                Err(Arc::new(AuditError::Store(StoreError::Unexpected(e))))
            })
        }
        .boxed()
        .shared()
    }
}

/// Takes scan `n` of `document`'s scope out of `running` when dropped.
struct Leave {
    running: Running,
    document: Option<Uuid>,
    n: u64,
}

impl Drop for Leave {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running
            .get(&self.document)
            .is_some_and(|(m, _)| *m == self.n)
        {
            running.remove(&self.document);
        }
    }
}

/// One scan of `document`'s chain (which must exist), or of every chain.
async fn scan(
    store: &PgStore,
    checkpoints: &CheckpointStore,
    document: Option<Uuid>,
) -> Result<AuditReport, AuditError> {
    if let Some(id) = document {
        if store.document(id).await?.is_none() {
            return Err(AuditError::NoSuchDocument(id));
        }
    }
    Ok(against_checkpoint(store, checkpoints, document).await?)
}
