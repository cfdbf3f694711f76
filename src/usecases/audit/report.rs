//! A check of the chains against the latest checkpoint: the checkpoint is read from its
//! store and checked first (its signature, and its link to the one before), then the
//! chains are walked against their heads and against it. Without an answer from the
//! checkpoint store, or with a checkpoint that does not hold, the chains are still checked
//! against their heads, and the report says what could not be checked: never a silent pass.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::audit::checkpoint::Checkpoint;
use crate::domain::audit::walk::Found;
use crate::store::mongo::CheckpointStore;
use crate::store::{BrokenAt, PgStore, StoreError, Verified};

/// What a check found, and what it was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditReport {
    pub verified: Verified,
    pub checkpoint: CheckpointUse,
}

/// What the latest checkpoint did for a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointUse {
    /// The chains were checked against checkpoint `sequence` (its signature and link
    /// hold), which holds `chains` chains.
    Checked {
        sequence: i64,
        taken_at: DateTime<Utc>,
        chains: usize,
    },
    /// No checkpoint was written yet: rewound or deleted chains cannot be found.
    NoneYet,
    /// The checkpoint store did not answer (the reason): rewound or deleted chains were not
    /// looked for.
    Unavailable(String),
    /// The latest checkpoint does not hold (`found`: changed, or missing its link): it
    /// was not used, and the report's break names it unless a chain broke.
    Broken { sequence: i64, found: Found },
}

impl CheckpointUse {
    /// `checked`, `none_yet`, `unavailable` or `broken`.
    pub fn status(&self) -> &'static str {
        match self {
            CheckpointUse::Checked { .. } => "checked",
            CheckpointUse::NoneYet => "none_yet",
            CheckpointUse::Unavailable(_) => "unavailable",
            CheckpointUse::Broken { .. } => "broken",
        }
    }

    /// What the check could not look at, in words; None when it looked at everything.
    pub fn unchecked(&self) -> Option<String> {
        let what = "chains rewound (rows removed from a chain's end with its head set back) \
                    and chains deleted with their document were not looked for";
        match self {
            CheckpointUse::Checked { .. } => None,
            CheckpointUse::NoneYet => Some(format!("{what}: no checkpoint was written yet")),
            CheckpointUse::Unavailable(why) => Some(format!(
                "{what}: the checkpoint store did not answer ({why})"
            )),
            CheckpointUse::Broken { sequence, found } => Some(format!(
                "{what}: checkpoint {sequence} does not hold ({})",
                found.as_str()
            )),
        }
    }
}

/// Checks `document`'s chain, or every chain, against their heads and the latest
/// checkpoint.
pub async fn against_checkpoint(
    store: &PgStore,
    checkpoints: &CheckpointStore,
    document: Option<Uuid>,
) -> Result<AuditReport, StoreError> {
    let (checkpoint, used) = match latest(checkpoints).await {
        Ok(Some(cp)) => match checked(store, checkpoints, &cp).await {
            Ok(used) => (
                matches!(used, CheckpointUse::Checked { .. }).then_some(cp),
                used,
            ),
            Err(e) => (None, CheckpointUse::Unavailable(format!("{e:#}"))),
        },
        Ok(None) => (None, CheckpointUse::NoneYet),
        Err(e) => (None, CheckpointUse::Unavailable(format!("{e:#}"))),
    };
    let mut verified = store.verify_audit(document, checkpoint.as_ref()).await?;
    if let (None, CheckpointUse::Broken { sequence, found }) = (&verified.broken_at, &used) {
        verified.broken_at = Some(BrokenAt {
            table: "audit_checkpoints",
            id: Some(sequence.to_string()),
            document_id: None,
            space: None,
            position: None,
            found: *found,
        });
    }
    Ok(AuditReport {
        verified,
        checkpoint: used,
    })
}

/// The latest checkpoint, whole; None before the first.
async fn latest(checkpoints: &CheckpointStore) -> anyhow::Result<Option<Checkpoint>> {
    let Some(header) = checkpoints.latest().await? else {
        return Ok(None);
    };
    Ok(Some(checkpoints.load(&header).await?))
}

/// Whether `cp` holds: signed with the service's key, and linked to the one before.
async fn checked(
    store: &PgStore,
    checkpoints: &CheckpointStore,
    cp: &Checkpoint,
) -> anyhow::Result<CheckpointUse> {
    let before = match cp.sequence {
        1 => None,
        n => checkpoints
            .header(n - 1)
            .await?
            .map(|h| (h.sequence, h.link)),
    };
    Ok(match cp.check(store.audit_key(), before) {
        Ok(()) => CheckpointUse::Checked {
            sequence: cp.sequence,
            taken_at: cp.taken_at,
            chains: cp.chains.len(),
        },
        Err(b) => CheckpointUse::Broken {
            sequence: b.sequence,
            found: b.found,
        },
    })
}
