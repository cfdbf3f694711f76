//! The rules of every change to a document, in one pure function: [`plan`] takes the rows
//! the store has locked, the actor, the command and the lock it runs under, and returns
//! either what to write ([`Plan`]) or why not ([`Refusal`]). No I/O happens here; the store
//! loads the rows, calls [`plan`], and writes the plan in the same transaction. Votes are
//! judged in `votes.rs`, claims and due dates in `claims.rs`.
//!
//! The order of the checks is part of the contract: a holder whose own lock moved on is
//! told so before anything else is judged (its token is compared with that lock's tokens
//! only), and the author of a document learns it may not review it before learning the
//! review is already decided.

use uuid::Uuid;

use super::events::{EventData, OutboxEntry};
use super::inputs::{DocumentBody, DocumentTitle, UserId};
use super::leases::check_lease;
use super::model::{Document, Guard, LockScope, Reader, Review};
use super::policy::Policy;
use super::spaces::SpaceRole;
use super::state::{Action, DocumentStatus};
use super::versions::{check_if_match, Conditions};

pub use super::comments::{plan_comment, CommentPlan, NewComment};
pub use super::plan::{
    audit, check_fence, transitioned, AuditEntry, Command, Decision, DocumentChange, Locked,
    NewDocument, NewVote, OpenReview, Plan, Publication, Refusal, ReviewChange, ReviewUpdate,
    ReviewWrite, Verify,
};

/// The plan of a create (its policy is chosen by the store: the one named, else the
/// space's, else the setting's). An author of the space creates; there is nothing to refuse.
pub fn plan_create(id: Uuid, title: DocumentTitle, body: DocumentBody) -> NewDocument {
    let status = DocumentStatus::Draft;
    NewDocument {
        id,
        title,
        body,
        status,
        version: 1,
        audit: AuditEntry {
            action: "create",
            review_id: None,
            from_status: None,
            to_status: status,
            version: 1,
            lock_mode: Guard::Unlocked.lock_mode(),
            fence_token: None,
        },
        outbox: OutboxEntry::from(EventData::Created {}),
    }
}

/// Judges `command` by `actor` on the `locked` rows under `guard`: what to write, or why not.
/// A document its actor may not read does not exist for it.
pub fn plan<'a>(
    locked: &Locked,
    actor: impl Into<Reader<'a>>,
    command: Command,
    guard: Guard,
) -> Result<Plan, Refusal> {
    plan_conditional(locked, actor, command, guard, Conditions::default())
}

/// As [`plan`], with the write's conditions, judged once the actor may act and before the
/// command itself: its `If-Match` (an edit's, submit's, withdrawal's or archive's; a vote
/// has none), then, for an edit, the edit lease (`leases::check_lease`).
pub fn plan_conditional<'a>(
    locked: &Locked,
    actor: impl Into<Reader<'a>>,
    command: Command,
    guard: Guard,
    conditions: Conditions<'_>,
) -> Result<Plan, Refusal> {
    let reader = actor.into();
    let actor = reader.id;
    let doc = locked.document.as_ref().ok_or(Refusal::NotFound)?;
    if !doc.readable_by(reader) {
        return Err(Refusal::NotFound);
    }
    check_role(doc, reader, &command)?;
    check_actor(doc, reader, &command)?;
    if !matches!(command, Command::Decide { .. }) {
        check_if_match(doc, conditions.if_match)?;
    }
    if matches!(command, Command::Edit { .. }) {
        check_lease(
            locked.lease.as_ref(),
            actor.as_str(),
            conditions.lease_token,
        )?;
    }
    match command {
        Command::Edit {
            title,
            body,
            policy,
        } => plan_edit(doc, actor, title, body, policy),
        Command::Submit { new_review_id } => {
            let policy = locked.policy.as_ref().ok_or(Refusal::NotFound)?;
            super::reverify::check_no_open_reverification(doc, locked.review.as_ref())?;
            plan_submit(doc, policy, actor, new_review_id, guard)
        }
        Command::Decide { decision, groups } => {
            let review = locked.review.as_ref().ok_or(Refusal::NotFound)?;
            let voter = super::votes::Voter {
                id: actor,
                groups: &groups,
            };
            super::votes::plan_vote(doc, review, voter, decision, guard, locked.now)
        }
        Command::Withdraw => plan_withdraw(doc, locked.review.as_ref(), actor, guard),
        Command::Archive {
            reason,
            expected_version,
        } => super::archive::plan_archive(
            doc,
            locked.review.as_ref(),
            reader,
            reason,
            expected_version,
            guard,
        ),
    }
}

/// The role `command` needs in the document's space (an archive needs none of its own: its
/// author or the space's admin archives, `plan_archive` judges).
fn check_role(doc: &Document, reader: Reader<'_>, command: &Command) -> Result<(), Refusal> {
    let (role, refusal) = match command {
        Command::Edit { .. } | Command::Submit { .. } | Command::Withdraw => (
            SpaceRole::Author,
            "this action needs the author role in the document's space",
        ),
        Command::Decide { .. } => (
            SpaceRole::Reviewer,
            "this action needs the reviewer role in the document's space",
        ),
        Command::Archive { .. } => return Ok(()),
    };
    if doc.roles_of(reader).contains(role) {
        Ok(())
    } else {
        Err(Refusal::Forbidden(refusal))
    }
}

/// Who may act on the document. Co-editing: once a document has been submitted, every
/// author of its space edits, submits and withdraws it; before, it is its author's alone.
/// An archive is its author's, a space admin's or an admin's.
fn check_actor(doc: &Document, reader: Reader<'_>, command: &Command) -> Result<(), Refusal> {
    let own = doc.author_id == reader.id.as_str();
    match command {
        Command::Edit { .. } | Command::Submit { .. } | Command::Withdraw
            if !own && !doc.ever_submitted() =>
        {
            Err(Refusal::Forbidden(
                "a document never submitted is its author's alone; its space's authors edit it once it is submitted",
            ))
        }
        Command::Archive { .. } if !own && !reader.administers(&doc.space) => Err(
            Refusal::Forbidden("only the author or an admin may archive a document"),
        ),
        _ => Ok(()),
    }
}

/// Whether `reader` may edit `doc` now (what taking its edit lease needs): it reads it, has
/// the author role in its space, may co-edit it, and its status takes an edit.
pub fn may_edit(doc: &Document, reader: Reader<'_>) -> Result<(), Refusal> {
    if !doc.readable_by(reader) {
        return Err(Refusal::NotFound);
    }
    let edit = Command::Edit {
        title: None,
        body: None,
        policy: None,
    };
    check_role(doc, reader, &edit)?;
    check_actor(doc, reader, &edit)?;
    doc.status.apply(Action::Edit)?;
    Ok(())
}

fn plan_edit(
    doc: &Document,
    actor: &UserId,
    title: Option<DocumentTitle>,
    body: Option<DocumentBody>,
    policy: Option<String>,
) -> Result<Plan, Refusal> {
    let status = doc.status.apply(Action::Edit)?;
    let version = doc.version + 1;
    let mut contributors = doc.contributors.clone();
    if !contributors.iter().any(|c| c == actor.as_str()) {
        contributors.push(actor.as_str().to_string());
    }
    Ok(Plan {
        document: Some(DocumentChange {
            id: doc.id,
            title,
            body,
            status,
            version,
            current_review_id: doc.current_review_id,
            policy,
            fence_token: doc.fence_token,
            published: Publication::Keep,
            contributors: Some(contributors),
            verify: Verify::Keep,
        }),
        review: None,
        audit: audit("edit", None, doc, status, Guard::Unlocked),
        outbox: OutboxEntry::from(EventData::Updated {}),
    })
}

fn plan_submit(
    doc: &Document,
    policy: &Policy,
    actor: &UserId,
    review_id: Uuid,
    guard: Guard,
) -> Result<Plan, Refusal> {
    let status = doc.status.apply(Action::Submit)?;
    check_fence(doc.fence_token, guard, LockScope::Document)?;
    let version = doc.version + 1;
    Ok(Plan {
        document: Some(transitioned(doc, status, Some(review_id), guard)),
        review: Some(ReviewChange::Open(OpenReview {
            id: review_id,
            kind: super::state::ReviewKind::Publish,
            document_version: version,
            submitted_by: actor.as_str().to_string(),
            policy: policy.name.clone(),
            policy_version: policy.version,
            due_after_secs: policy.due_after_secs,
            deadline: None,
            fence_token: guard.fence_of(LockScope::Document),
        })),
        audit: audit("submit", Some(review_id), doc, status, guard),
        outbox: OutboxEntry::from(EventData::Submitted {
            title: doc.title.clone(),
            submitted_by: actor.as_str().to_string(),
        }),
    })
}

/// A draft its author reads (never submitted, or withdrawn) is an invalid state, not a
/// missing review: the author sees the document, so a 404 would mislead.
fn plan_withdraw(
    doc: &Document,
    review: Option<&Review>,
    actor: &UserId,
    guard: Guard,
) -> Result<Plan, Refusal> {
    check_fence(doc.fence_token, guard, LockScope::Document)?;
    let status = doc.status.apply(Action::Withdraw)?;
    let review = review.ok_or(Refusal::NotFound)?;
    if doc.current_review_id != Some(review.id) {
        return Err(Refusal::NotCurrentReview);
    }
    let withdrawn = review
        .status
        .apply(Action::Withdraw)
        .ok_or(Refusal::ReviewNotPending(review.status))?;
    Ok(Plan {
        document: Some(transitioned(doc, status, doc.current_review_id, guard)),
        review: Some(ReviewChange::Write(ReviewWrite {
            id: review.id,
            vote: None,
            update: Some(ReviewUpdate {
                status: withdrawn,
                stage: review.stage,
                decided_by: Some(actor.as_str().to_string()),
                comment: None,
                reason: None,
                fence_token: review.fence_token,
            }),
            end_claims: true,
        })),
        audit: audit("withdraw", Some(review.id), doc, status, guard),
        outbox: OutboxEntry::from(EventData::Withdrawn {
            title: doc.title.clone(),
            withdrawn_by: actor.as_str().to_string(),
        }),
    })
}

#[cfg(test)]
mod coediting;
#[cfg(test)]
mod tests;
