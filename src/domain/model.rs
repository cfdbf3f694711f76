//! The entities as PostgreSQL holds them, and the lock a change runs under. Plain data: the
//! store reads rows into these types and the rules in `rules.rs` judge them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::inputs::UserId;
use super::policy::Stage;
use super::spaces::{Access, SpaceRole, SpaceRoles, DEFAULT_SPACE};
use super::state::{DocumentStatus, ReviewKind, ReviewStatus};

/// A document. `body` is the source of truth; MongoDB holds a projection of it. (Serialized,
/// a document may leave its body out: it then reads back empty.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub id: Uuid,
    pub title: String,
    #[serde(default)]
    pub body: String,
    pub status: DocumentStatus,
    pub version: i64,
    pub author_id: String,
    /// The key of the space it is in, for life.
    #[serde(default = "default_space")]
    pub space: String,
    pub current_review_id: Option<Uuid>,
    /// The review policy its next review follows.
    #[serde(default = "default_policy")]
    pub policy: String,
    /// The highest fencing token of the document's own outer lock (submit, withdraw,
    /// archive).
    pub fence_token: Option<FencingToken>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The version the last approval gave the document, while it is published (`None`
    /// before the first approval and after an archive), with that revision's title and
    /// body: what readers and indexes see while the next revision is drafted.
    #[serde(default)]
    pub published_version: Option<i64>,
    #[serde(default)]
    pub published_title: Option<String>,
    #[serde(default)]
    pub published_body: Option<String>,
    /// Everyone who edited it since its last approval, in the order of their first edit.
    #[serde(default)]
    pub contributors: Vec<String>,
    /// When its published version is next due for re-verification (its policy's
    /// `reverify_after_secs` after the approval that published it, or after the last
    /// re-verification). `None`: none is scheduled, or one is open (its review carries the
    /// deadline).
    #[serde(default)]
    pub verify_by: Option<DateTime<Utc>>,
}

impl Document {
    /// Submitted at least once: readable by every role. Before its first submit a
    /// document is its author's (and admins') alone.
    pub fn ever_submitted(&self) -> bool {
        self.current_review_id.is_some()
    }

    /// A revision is in progress: the working copy is ahead of the published one.
    pub fn in_revision(&self) -> bool {
        self.published_version.is_some_and(|p| p < self.version)
    }

    /// `reader` may see the document at all (to anyone else it does not exist).
    pub fn readable_by(&self, reader: Reader<'_>) -> bool {
        readable(&self.author_id, self.ever_submitted(), &self.space, reader)
    }

    /// `user` wrote the working copy: its author, or one who edited it since its last
    /// approval. Four eyes: such a person may not vote on the version under review.
    pub fn written_by(&self, user: &str) -> bool {
        self.author_id == user || self.contributors.iter().any(|c| c == user)
    }

    /// The roles `reader` holds in the document's space.
    pub fn roles_of(&self, reader: Reader<'_>) -> SpaceRoles {
        reader.access.roles_in(&self.space)
    }
}

fn default_space() -> String {
    DEFAULT_SPACE.to_string()
}

/// A document by `author_id` in `space` that was (or never was) `ever_submitted` is visible
/// to `reader` only with a role in `space`; then once submitted, to every role there;
/// before, to its author and the space's admins alone.
pub fn readable(author_id: &str, ever_submitted: bool, space: &str, reader: Reader<'_>) -> bool {
    let roles = reader.access.roles_in(space);
    !roles.is_empty()
        && (ever_submitted
            || roles.contains(SpaceRole::SpaceAdmin)
            || author_id == reader.id.as_str())
}

/// Who reads or writes, as far as visibility is concerned: its id, and its roles in each
/// space.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    pub id: &'a UserId,
    pub access: &'a Access,
}

#[cfg(test)]
impl<'a> From<&'a UserId> for Reader<'a> {
    /// In unit tests: a caller with the author and reviewer roles of its token (so in the
    /// space `default`), not the platform admin.
    fn from(id: &'a UserId) -> Self {
        static MEMBER: std::sync::OnceLock<Access> = std::sync::OnceLock::new();
        let access = MEMBER.get_or_init(|| {
            let token = super::spaces::TokenRoles {
                author: true,
                reviewer: true,
                admin: false,
            };
            Access::new(token, [])
        });
        Self { id, access }
    }
}

impl Reader<'_> {
    /// The reader administers `space` (a space admin there, or the platform admin): it reads
    /// every draft there, archives any document, ends any claim.
    pub fn administers(&self, space: &str) -> bool {
        self.access.has(space, SpaceRole::SpaceAdmin)
    }
}

/// A comment on a document, `seq` counting from 1 in the order comments committed; it may
/// point at one review round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedComment {
    pub id: Uuid,
    pub document_id: Uuid,
    pub seq: i64,
    pub review_id: Option<Uuid>,
    pub author_id: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
}

/// What a comment wrote, with the document it is on (as locked: a comment changes nothing
/// of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commented {
    pub comment: PostedComment,
    pub document: Document,
}

/// What an archive wrote: the document, and the pending review it withdrew, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Archived {
    pub document: Document,
    pub review: Option<Review>,
}

/// A review of one submitted version of a document, with the policy version it follows,
/// the votes cast on it and the claims held on it. (Records written before policies existed
/// read back with the default policy's one stage.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub id: Uuid,
    pub document_id: Uuid,
    pub status: ReviewStatus,
    pub document_version: i64,
    pub submitted_by: String,
    pub submitted_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    /// The highest fencing token of the review's own outer lock.
    pub fence_token: Option<FencingToken>,
    #[serde(default = "default_policy")]
    pub policy: String,
    #[serde(default = "first_version")]
    pub policy_version: i32,
    /// Index of the current stage in `stages`.
    #[serde(default)]
    pub stage: i32,
    /// When it is due: its policy's `due_after_secs` after its submit; for a
    /// re-verification, the deadline after which its document expires.
    #[serde(default)]
    pub due_at: Option<DateTime<Utc>>,
    /// A submit opened it, or the re-verification scheduler.
    #[serde(default)]
    pub kind: ReviewKind,
    /// Its policy version's `reverify_after_secs`: an approval of it makes the document
    /// due for re-verification that long after.
    #[serde(default)]
    pub reverify_after_secs: Option<i32>,
    /// How long a claim on it lasts (its policy version's `claim_ttl_secs`).
    #[serde(default = "default_claim_ttl")]
    pub claim_ttl_secs: i32,
    #[serde(default = "default_stages")]
    pub stages: Vec<Stage>,
    /// Every vote, in the order cast.
    #[serde(default)]
    pub votes: Vec<Vote>,
    /// The claims live when the review was read.
    #[serde(default)]
    pub claims: Vec<Claim>,
}

fn default_policy() -> String {
    super::policy::DEFAULT_POLICY.to_string()
}

fn first_version() -> i32 {
    1
}

fn default_claim_ttl() -> i32 {
    super::policy::DEFAULT_CLAIM_TTL_SECS
}

fn default_stages() -> Vec<Stage> {
    vec![Stage::default_stage()]
}

impl Review {
    /// The current stage (the last one once decided).
    pub fn current_stage(&self) -> Option<&Stage> {
        self.stages.get(self.stage.max(0) as usize)
    }

    /// The approvals cast in stage `stage`.
    pub fn approvals_in(&self, stage: i32) -> usize {
        self.votes
            .iter()
            .filter(|v| v.stage == stage && v.kind == VoteKind::Approve)
            .count()
    }

    /// Still pending and past its due date at `now`.
    pub fn overdue_at(&self, now: DateTime<Utc>) -> bool {
        self.status == ReviewStatus::Pending && self.due_at.is_some_and(|d| d <= now)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VoteKind {
    Approve,
    Reject,
}

impl VoteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VoteKind::Approve => "APPROVE",
            VoteKind::Reject => "REJECT",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "APPROVE" => Some(VoteKind::Approve),
            "REJECT" => Some(VoteKind::Reject),
            _ => None,
        }
    }
}

/// One person's vote on a review, in the stage it was cast in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub voter_id: String,
    pub stage: i32,
    pub kind: VoteKind,
    pub comment: Option<String>,
    pub at: DateTime<Utc>,
}

/// A seat held on a review's current stage until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub reviewer_id: String,
    pub stage: i32,
    pub claimed_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// What one transition (submit, approve, reject) wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transitioned {
    pub document: Document,
    pub review: Review,
}

/// Strictly increasing per lock key across acquisitions; stored on the rows a holder writes
/// so that a former holder can never write over a newer one. Stored as the `int8` it is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, sqlx::Type, Serialize, Deserialize,
)]
#[sqlx(transparent)]
#[serde(transparent)]
pub struct FencingToken(i64);

impl FencingToken {
    pub fn new(v: i64) -> Self {
        Self(v)
    }
    pub fn value(self) -> i64 {
        self.0
    }
}

/// Which outer lock a change holds: each has its own fencing counter, so a token is only
/// ever compared with tokens of the same lock, kept on the row that lock guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockScope {
    /// `lock:doc:submit:{document}`: submit, withdraw and archive; kept on the document.
    Document,
    /// `lock:doc:review:{review}`: a vote in a one-approval stage; kept on the review.
    Review,
    /// `lock:doc:review:{review}:voter:<voter>`: a vote in a stage needing more; kept on the
    /// vote.
    Voter,
}

/// The outer lock a change runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The Redis lock is held, with its fencing token.
    Outer(LockScope, FencingToken),
    /// Redis is unavailable: the row lock alone.
    RowLockOnly,
    /// Changes that never take the outer lock (create, edit, claims, sweeps).
    Unlocked,
}

impl Guard {
    /// How the audit trail names it.
    pub fn lock_mode(self) -> &'static str {
        match self {
            Guard::Outer(..) => "redis",
            Guard::RowLockOnly => "row_lock_only",
            Guard::Unlocked => "none",
        }
    }

    /// The fencing token a change under this guard writes with, if it has one.
    pub fn fence(self) -> Option<FencingToken> {
        match self {
            Guard::Outer(_, f) => Some(f),
            Guard::RowLockOnly | Guard::Unlocked => None,
        }
    }

    /// The fencing token, if the guard is the outer lock of `scope`.
    pub fn fence_of(self, scope: LockScope) -> Option<FencingToken> {
        match self {
            Guard::Outer(s, f) if s == scope => Some(f),
            _ => None,
        }
    }
}

/// A document's lease row as an edit finds it: who holds it, its token (`None`: given back
/// or broken), and whether it is live, with when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditLease {
    pub holder: Option<String>,
    pub token: Option<String>,
    pub expires_at: DateTime<Utc>,
    /// Held and not expired, by the database's clock, when the edit read it.
    pub live: bool,
    /// Whole seconds until it ends (at least 1 while live).
    pub retry_after_secs: u64,
}

/// What a change does to `verify_by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    Keep,
    /// Due at this time (an approval under a policy that re-verifies, a re-verification).
    At(DateTime<Utc>),
    /// Nothing scheduled (an approval under a policy that does not re-verify, a
    /// re-verification opened, an expiry, an archive).
    Clear,
}

impl Verify {
    /// The due time `after_secs` after `now` (`Clear`: none).
    pub fn after(now: DateTime<Utc>, after_secs: Option<i32>) -> Self {
        match after_secs {
            Some(secs) => Verify::At(now + chrono::Duration::seconds(i64::from(secs))),
            None => Verify::Clear,
        }
    }
}
