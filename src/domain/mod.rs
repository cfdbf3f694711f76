//! The domain: validated inputs, the entities, the state machine and the rules of every
//! change. Nothing here does I/O, and nothing here imports another module of the crate.

mod archive;
pub mod audit;
pub mod claims;
mod comments;
mod decisions;
pub mod diff;
mod events;
mod inputs;
pub mod leases;
mod model;
mod plan;
pub mod policy;
pub mod replay;
pub mod reverify;
pub mod rules;
mod search;
pub mod space_changes;
pub mod spaces;
mod state;
mod versions;
pub mod votes;
pub mod webhooks;

pub use events::{EventData, EventType, OutboxEntry};
pub use inputs::{
    ArchiveReason, Comment, CommentBody, DocumentBody, DocumentTitle, InputError, RejectReason,
    UserId,
};
pub use model::{
    readable, Archived, Claim, Commented, Document, FencingToken, Guard, LockScope, PostedComment,
    Reader, Review, Transitioned, Vote, VoteKind,
};
pub use policy::{Policy, PolicyDraft, PolicyName, Reverify, Stage, DEFAULT_POLICY};
pub use rules::{Command, Decision, Locked, Plan, Refusal};
pub use search::TitleQuery;
pub use space_changes::{
    check_last_admin, Membership, SpaceAction, SpaceActionRecord, SpaceChangeRecord, SpaceName,
    SpaceRefusal,
};
pub use spaces::{
    Access, Space, SpaceKey, SpaceRole, SpaceRoles, Subject, TokenRoles, DEFAULT_SPACE,
};
pub use state::{Action, DocumentStatus, InvalidTransition, ReviewKind, ReviewStatus};
pub use versions::{Conditions, IfMatch};

/// How much of the body the preview keeps, in characters.
pub const PREVIEW_CHARS: usize = 280;

/// The preview shown in lists: the first [`PREVIEW_CHARS`] characters, whitespace folded.
pub fn preview_of(body: &str) -> String {
    let folded: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    folded.chars().take(PREVIEW_CHARS).collect()
}

#[cfg(test)]
mod test_support;
