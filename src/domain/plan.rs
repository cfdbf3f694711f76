//! What a change writes, and why it may not happen: the shapes every rule returns
//! ([`Plan`], [`Refusal`]) and takes ([`Command`], [`Locked`]), with the helpers the rules
//! of documents (`rules.rs`) and of votes (`votes.rs`) share.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::events::OutboxEntry;
use super::inputs::{ArchiveReason, Comment, DocumentBody, DocumentTitle, RejectReason};
pub use super::model::Verify;
use super::model::{Document, EditLease, FencingToken, Guard, LockScope, Review, VoteKind};
use super::policy::Policy;
use super::state::{Action, DocumentStatus, InvalidTransition, ReviewKind, ReviewStatus};

/// A reviewer's vote. An approval carries an optional comment, a rejection a reason: an
/// approval with a reason cannot be written down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve(Option<Comment>),
    Reject(RejectReason),
}

impl Decision {
    pub fn action(&self) -> Action {
        match self {
            Decision::Approve(_) => Action::Approve,
            Decision::Reject(_) => Action::Reject,
        }
    }
    pub fn kind(&self) -> VoteKind {
        match self {
            Decision::Approve(_) => VoteKind::Approve,
            Decision::Reject(_) => VoteKind::Reject,
        }
    }
}

/// What the actor asks of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// New title, body and/or policy (at least one; the HTTP layer checks that; the store
    /// that the policy exists).
    Edit {
        title: Option<DocumentTitle>,
        body: Option<DocumentBody>,
        policy: Option<String>,
    },
    /// Open a new review, with this id, for the document's next version.
    Submit { new_review_id: Uuid },
    /// Vote on the locked review, as a member of `groups`.
    Decide {
        decision: Decision,
        groups: Vec<String>,
    },
    /// Withdraw the document's pending review.
    Withdraw,
    /// Archive the document (withdrawing a pending review), if it is still at
    /// `expected_version` when one is given.
    Archive {
        reason: Option<ArchiveReason>,
        expected_version: Option<i64>,
    },
}

/// The rows the store locked for the command (`None`: no such row), and the time read
/// once they were locked.
#[derive(Debug, Clone)]
pub struct Locked {
    pub document: Option<Document>,
    /// The review voted on or withdrawn (for an archive: the pending review, if any);
    /// `None` for edits and submits.
    pub review: Option<Review>,
    /// The current version of the document's policy, for a submit.
    pub policy: Option<Policy>,
    /// The document's edit lease row, for an edit (`None`: it never had one).
    pub lease: Option<EditLease>,
    pub now: DateTime<Utc>,
}

impl Default for Locked {
    fn default() -> Self {
        Self {
            document: None,
            review: None,
            policy: None,
            lease: None,
            now: Utc::now(),
        }
    }
}

/// Why a command may not happen. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such document or review")]
    NotFound,
    #[error("{0}")]
    Forbidden(&'static str),
    /// Four eyes: the author, or a contributor of the version under review.
    #[error("the author or a contributor of a document's version may not review it")]
    SelfReview,
    #[error(transparent)]
    InvalidState(#[from] InvalidTransition),
    #[error("the review is already {}", .0.as_str())]
    ReviewNotPending(ReviewStatus),
    #[error("the review is not the document's current review")]
    NotCurrentReview,
    #[error("the document already has a pending review")]
    AlreadyPending,
    /// A newer holder of the same outer lock wrote the row it guards.
    #[error("the outer lock moved on to a newer holder")]
    StaleFence,
    #[error("you already voted on this review")]
    AlreadyVoted,
    #[error("{}", not_eligible_message(stage, groups))]
    NotEligible { stage: String, groups: Vec<String> },
    #[error("{}", claimed_message(holders, *until))]
    ReviewClaimed {
        holders: Vec<String>,
        until: DateTime<Utc>,
        retry_after_secs: u64,
    },
    #[error("no review policy is named {0:?}")]
    UnknownPolicy(String),
    #[error("{0} holds no claim on this review")]
    NoClaim(String),
    /// The caller acted on a version the document has moved on from.
    #[error("the document is at version {actual} now ({}), not version {expected}", .status.as_str())]
    VersionMoved {
        expected: i64,
        actual: i64,
        status: DocumentStatus,
    },
    /// The caller's `If-Match` names a version the document is no longer at.
    #[error("the document is at version {current} now ({}): the version your If-Match names is not current; read it again", .status.as_str())]
    VersionMismatch {
        current: i64,
        status: DocumentStatus,
    },
    /// A version the document no longer holds (it keeps its published and working ones).
    #[error("{}", not_held_message(*asked, *working, *published))]
    VersionNotHeld {
        asked: i64,
        working: i64,
        published: Option<i64>,
    },
    /// Another person holds a live edit lease on the document.
    #[error("{holder} is editing this document (an edit lease until {}); retry once it ends, or ask a space admin to break it", until.format("%Y-%m-%dT%H:%M:%SZ"))]
    DocumentLeased {
        holder: String,
        until: DateTime<Utc>,
        retry_after_secs: u64,
    },
    /// Nobody holds a live edit lease on the document (to break or give back).
    #[error("nobody holds an edit lease on this document")]
    NoLease,
    /// The edit's `Lease-Token` names a lease that expired or was broken.
    #[error("your edit lease on this document expired or was broken, and someone may have edited it since: take the lease again and reload the document")]
    LeaseLost,
    #[error("review {0} is not a review of this document")]
    ReviewOfAnotherDocument(Uuid),
    /// A re-verification of the document's published version is open: it is not submitted
    /// again until that is decided.
    #[error("a re-verification of this document's published version is open until {}: a reviewer approves it (it stays published) or rejects it (it is unpublished); until then the document cannot be submitted", until.format("%Y-%m-%dT%H:%M:%SZ"))]
    Reverifying { until: DateTime<Utc> },
}

fn not_held_message(asked: i64, working: i64, published: Option<i64>) -> String {
    let kept = match published {
        Some(p) if p != working => {
            format!("its published version {p} and its working version {working}")
        }
        _ => format!("its working version {working}"),
    };
    format!("version {asked} is not kept: the document holds {kept}")
}

/// `a`, `a and b`, `a, b and c`.
fn listed(names: &[String]) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

fn not_eligible_message(stage: &str, groups: &[String]) -> String {
    let (noun, verb) = if groups.len() == 1 {
        ("group", "votes")
    } else {
        ("groups", "vote")
    };
    format!(
        "only the {} {noun} {verb} in stage {stage:?}",
        listed(groups)
    )
}

fn claimed_message(holders: &[String], until: DateTime<Utc>) -> String {
    let (verb, seats) = if holders.len() == 1 {
        ("holds", "the only free seat".to_string())
    } else {
        ("hold", format!("the {} free seats", holders.len()))
    };
    format!(
        "{} {verb} {seats} of this stage; the first is free at {} at the latest",
        listed(holders),
        until.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

/// The new state of the document row. `None` title or body: unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentChange {
    pub id: Uuid,
    pub title: Option<DocumentTitle>,
    pub body: Option<DocumentBody>,
    pub status: DocumentStatus,
    pub version: i64,
    pub current_review_id: Option<Uuid>,
    /// A new policy; `None`: unchanged.
    pub policy: Option<String>,
    pub fence_token: Option<FencingToken>,
    pub published: Publication,
    /// Everyone who edited the document since its last approval, when the change moves the
    /// list (an edit adds its editor, an approval empties it); `None`: unchanged.
    pub contributors: Option<Vec<String>>,
    /// What the change does to the next re-verification's due time.
    pub verify: Verify,
}

/// What a change does to the published revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    Keep,
    /// The document as it is after the change becomes the published revision (an approval).
    Publish,
    /// Nothing is published any more (an archive).
    Withdraw,
}

/// A new pending review, opened by a submit (or by the re-verification scheduler).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReview {
    pub id: Uuid,
    pub kind: ReviewKind,
    pub document_version: i64,
    pub submitted_by: String,
    pub policy: String,
    pub policy_version: i32,
    /// The review is due this long after it opens.
    pub due_after_secs: Option<i32>,
    /// When it is due, when the rules chose the time (a re-verification's deadline, also
    /// named by its event); else `due_after_secs` after the time the store writes it.
    pub deadline: Option<DateTime<Utc>>,
    pub fence_token: Option<FencingToken>,
}

/// A vote to record: its row, and the voter's claim used up with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVote {
    pub voter_id: String,
    pub stage: i32,
    pub kind: VoteKind,
    pub comment: Option<String>,
    /// The token of the voter's own outer lock, when the vote ran under it.
    pub fence_token: Option<FencingToken>,
}

/// The review row after a change: its stage, or its decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewUpdate {
    pub status: ReviewStatus,
    pub stage: i32,
    /// Set when the review is decided (or withdrawn).
    pub decided_by: Option<String>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    pub fence_token: Option<FencingToken>,
}

/// What a vote or a withdrawal writes on a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewWrite {
    pub id: Uuid,
    pub vote: Option<NewVote>,
    /// `None`: the review row stays as it is (a vote that decides nothing).
    pub update: Option<ReviewUpdate>,
    /// End every claim on the review (a stage completed, the review decided or withdrawn).
    pub end_claims: bool,
}

/// The review row a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewChange {
    Open(OpenReview),
    Write(ReviewWrite),
}

/// The audit row of a change (actor and request id are added by the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub action: &'static str,
    pub review_id: Option<Uuid>,
    pub from_status: Option<DocumentStatus>,
    pub to_status: DocumentStatus,
    pub version: i64,
    pub lock_mode: &'static str,
    pub fence_token: Option<FencingToken>,
}

/// Everything one change writes, in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// `None`: the document row stays as it is (a vote that decides nothing).
    pub document: Option<DocumentChange>,
    pub review: Option<ReviewChange>,
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// A new document: DRAFT, version 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDocument {
    pub id: Uuid,
    pub title: DocumentTitle,
    pub body: DocumentBody,
    pub status: DocumentStatus,
    pub version: i64,
    pub audit: AuditEntry,
    pub outbox: OutboxEntry,
}

/// A holder of the outer lock of `scope` whose token is older than the one `stored` on the
/// row that lock guards lost its lock to a newer holder. Tokens of other locks are never
/// compared: each lock has its own counter.
pub fn check_fence(
    stored: Option<FencingToken>,
    guard: Guard,
    scope: LockScope,
) -> Result<(), Refusal> {
    match (stored, guard.fence_of(scope)) {
        (Some(stored), Some(mine)) if mine < stored => Err(Refusal::StaleFence),
        _ => Ok(()),
    }
}

/// The document after a transition: next status and version, the highest fence of its own
/// lock seen.
pub fn transitioned(
    doc: &Document,
    status: DocumentStatus,
    current_review_id: Option<Uuid>,
    guard: Guard,
) -> DocumentChange {
    DocumentChange {
        id: doc.id,
        title: None,
        body: None,
        status,
        version: doc.version + 1,
        current_review_id,
        policy: None,
        fence_token: doc.fence_token.max(guard.fence_of(LockScope::Document)),
        published: Publication::Keep,
        contributors: None,
        verify: Verify::Keep,
    }
}

/// The audit row of a change that moves the document to its next version.
pub fn audit(
    action: &'static str,
    review_id: Option<Uuid>,
    before: &Document,
    to_status: DocumentStatus,
    guard: Guard,
) -> AuditEntry {
    AuditEntry {
        action,
        review_id,
        from_status: Some(before.status),
        to_status,
        version: before.version + 1,
        lock_mode: guard.lock_mode(),
        fence_token: guard.fence(),
    }
}
