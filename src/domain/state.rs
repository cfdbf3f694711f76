//! The one place the state machine lives.
//!
//! Document: `DRAFT -submit-> PENDING_REVIEW -approve-> APPROVED`,
//! `PENDING_REVIEW -reject-> REJECTED`, `PENDING_REVIEW -withdraw-> DRAFT`,
//! `REJECTED -submit-> PENDING_REVIEW`, `APPROVED -edit-> DRAFT` (a revision: the approved
//! version stays published), `APPROVED -expire-> EXPIRED` (a re-verification rejected or
//! left undecided past its grace: nothing is published any more), `EXPIRED` revised and
//! submitted like `REJECTED`, any status but `ARCHIVED` `-archive-> ARCHIVED` (terminal).
//! (`approve` is the approval that completes the review's last stage; the others are votes
//! that leave the status as it is.) Comments leave the status as it is, and an archived
//! document takes none.
//! Review: `PENDING -> APPROVED | REJECTED | WITHDRAWN`.

use serde::{Deserialize, Serialize};

/// Stores a status enum as its name in a `text` column (the columns carry CHECK constraints
/// naming the same values), so SQL checked at compile time reads and binds the enum itself.
macro_rules! text_column {
    ($ty:ident, $what:literal) => {
        impl sqlx::Type<sqlx::Postgres> for $ty {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }
            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl sqlx::Decode<'_, sqlx::Postgres> for $ty {
            fn decode(
                value: sqlx::postgres::PgValueRef<'_>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let s = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                Self::parse(s).ok_or_else(|| format!("unknown {} {s:?}", $what).into())
            }
        }
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DocumentStatus {
    Draft,
    PendingReview,
    Approved,
    Rejected,
    Archived,
    /// Was approved; nobody re-verified it in time, or a re-verification was rejected.
    Expired,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewStatus {
    Pending,
    Approved,
    Rejected,
    Withdrawn,
}

/// Why a review was opened: a submit of a version (`publish`), or the re-verification of a
/// published one that came due (`reverify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReviewKind {
    #[default]
    Publish,
    Reverify,
}

impl ReviewKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewKind::Publish => "publish",
            ReviewKind::Reverify => "reverify",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "publish" => Some(ReviewKind::Publish),
            "reverify" => Some(ReviewKind::Reverify),
            _ => None,
        }
    }
}

text_column!(DocumentStatus, "document status");
text_column!(ReviewStatus, "review status");
text_column!(ReviewKind, "review kind");
pub(crate) use text_column;

/// What a caller asks of a document; the rules in `rules.rs` say whether it may happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Edit,
    Submit,
    Approve,
    Reject,
    Withdraw,
    Archive,
    Comment,
    /// Unpublish an approved document nobody re-verified (the scheduler, or a rejected
    /// re-verification).
    Expire,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Edit => "edit",
            Action::Submit => "submit",
            Action::Approve => "approve",
            Action::Reject => "reject",
            Action::Withdraw => "withdraw",
            Action::Archive => "archive",
            Action::Comment => "comment on",
            Action::Expire => "expire",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot {action} a document in state {from}", action = .action.as_str(), from = .from.as_str())]
pub struct InvalidTransition {
    pub from: DocumentStatus,
    pub action: Action,
}

impl DocumentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Draft => "DRAFT",
            DocumentStatus::PendingReview => "PENDING_REVIEW",
            DocumentStatus::Approved => "APPROVED",
            DocumentStatus::Rejected => "REJECTED",
            DocumentStatus::Archived => "ARCHIVED",
            DocumentStatus::Expired => "EXPIRED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "DRAFT" => DocumentStatus::Draft,
            "PENDING_REVIEW" => DocumentStatus::PendingReview,
            "APPROVED" => DocumentStatus::Approved,
            "REJECTED" => DocumentStatus::Rejected,
            "ARCHIVED" => DocumentStatus::Archived,
            "EXPIRED" => DocumentStatus::Expired,
            _ => return None,
        })
    }

    /// The status after `action`, or why it is not allowed. Edits keep the status, except
    /// that an edit of an approved document starts a revision (DRAFT). An expired document
    /// is revised and submitted like a rejected one.
    pub fn apply(self, action: Action) -> Result<DocumentStatus, InvalidTransition> {
        use Action::*;
        use DocumentStatus::*;
        match (self, action) {
            (Draft | Rejected | Expired, Edit) => Ok(self),
            (Approved, Edit) => Ok(Draft),
            (Draft | PendingReview | Approved | Rejected | Expired, Archive) => Ok(Archived),
            (Draft | PendingReview | Approved | Rejected | Expired, Comment) => Ok(self),
            (Draft | Rejected | Expired, Submit) => Ok(PendingReview),
            (Approved, Expire) => Ok(Expired),
            (PendingReview, Approve) => Ok(Approved),
            (PendingReview, Reject) => Ok(Rejected),
            (PendingReview, Withdraw) => Ok(Draft),
            (from, action) => Err(InvalidTransition { from, action }),
        }
    }
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewStatus::Pending => "PENDING",
            ReviewStatus::Approved => "APPROVED",
            ReviewStatus::Rejected => "REJECTED",
            ReviewStatus::Withdrawn => "WITHDRAWN",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "PENDING" => ReviewStatus::Pending,
            "APPROVED" => ReviewStatus::Approved,
            "REJECTED" => ReviewStatus::Rejected,
            "WITHDRAWN" => ReviewStatus::Withdrawn,
            _ => return None,
        })
    }

    /// A decision is only possible on a pending review.
    pub fn apply(self, action: Action) -> Option<ReviewStatus> {
        match (self, action) {
            (ReviewStatus::Pending, Action::Approve) => Some(ReviewStatus::Approved),
            (ReviewStatus::Pending, Action::Reject) => Some(ReviewStatus::Rejected),
            (ReviewStatus::Pending, Action::Withdraw) => Some(ReviewStatus::Withdrawn),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = DocumentStatus> {
        prop_oneof![
            Just(DocumentStatus::Draft),
            Just(DocumentStatus::PendingReview),
            Just(DocumentStatus::Approved),
            Just(DocumentStatus::Rejected),
            Just(DocumentStatus::Archived),
            Just(DocumentStatus::Expired),
        ]
    }

    fn any_action() -> impl Strategy<Value = Action> {
        prop_oneof![
            Just(Action::Edit),
            Just(Action::Submit),
            Just(Action::Approve),
            Just(Action::Reject),
            Just(Action::Withdraw),
            Just(Action::Archive),
            Just(Action::Comment),
            Just(Action::Expire),
        ]
    }

    #[test]
    fn the_happy_paths() {
        use Action::*;
        use DocumentStatus::*;
        assert_eq!(Draft.apply(Submit), Ok(PendingReview));
        assert_eq!(PendingReview.apply(Approve), Ok(Approved));
        assert_eq!(PendingReview.apply(Reject), Ok(Rejected));
        assert_eq!(Rejected.apply(Submit), Ok(PendingReview));
        assert_eq!(Approved.apply(Edit), Ok(Draft));
        assert_eq!(PendingReview.apply(Archive), Ok(Archived));
        assert!(Archived.apply(Archive).is_err());
        assert!(Archived.apply(Edit).is_err());
        assert!(Archived.apply(Comment).is_err());
        assert!(PendingReview.apply(Edit).is_err());
        assert!(Draft.apply(Approve).is_err());
        assert_eq!(Approved.apply(Expire), Ok(Expired));
        assert_eq!(Expired.apply(Edit), Ok(Expired));
        assert_eq!(Expired.apply(Submit), Ok(PendingReview));
        assert_eq!(Expired.apply(Archive), Ok(Archived));
        assert!(Expired.apply(Approve).is_err());
        assert!(PendingReview.apply(Expire).is_err());
    }

    proptest! {
        // ARCHIVED is terminal; an approved document only leaves APPROVED by an edit (a
        // revision), an expiry or an archive; PENDING_REVIEW is left by a decision, a withdrawal or an
        // archive.
        #[test]
        fn archived_is_terminal_and_pending_only_decides(s in any_status(), a in any_action()) {
            let r = s.apply(a);
            if s == DocumentStatus::Archived { prop_assert!(r.is_err()); }
            if s == DocumentStatus::Approved {
                prop_assert_eq!(r.is_ok(), matches!(a, Action::Edit | Action::Expire | Action::Archive | Action::Comment));
            }
            if s == DocumentStatus::PendingReview {
                prop_assert_eq!(r.is_ok(), matches!(a, Action::Approve | Action::Reject | Action::Withdraw | Action::Archive | Action::Comment));
            }
            if let Err(e) = r { prop_assert_eq!(e.from, s); prop_assert_eq!(e.action, a); }
        }

        // Any sequence of actions only ever walks edges of the documented graph.
        #[test]
        fn walks_stay_on_the_graph(actions in proptest::collection::vec(any_action(), 0..40)) {
            let mut s = DocumentStatus::Draft;
            for a in actions {
                if let Ok(next) = s.apply(a) {
                    let allowed = matches!((s, next),
                        (DocumentStatus::Draft, DocumentStatus::Draft)
                        | (DocumentStatus::Rejected, DocumentStatus::Rejected)
                        | (DocumentStatus::Expired, DocumentStatus::Expired)
                        | (DocumentStatus::Approved, DocumentStatus::Expired)
                        | (DocumentStatus::Expired, DocumentStatus::PendingReview)
                        | (DocumentStatus::PendingReview, DocumentStatus::PendingReview)
                        | (DocumentStatus::Approved, DocumentStatus::Approved)
                        | (DocumentStatus::Approved, DocumentStatus::Draft)
                        | (_, DocumentStatus::Archived)
                        | (DocumentStatus::Draft, DocumentStatus::PendingReview)
                        | (DocumentStatus::Rejected, DocumentStatus::PendingReview)
                        | (DocumentStatus::PendingReview, DocumentStatus::Approved)
                        | (DocumentStatus::PendingReview, DocumentStatus::Draft)
                        | (DocumentStatus::PendingReview, DocumentStatus::Rejected));
                    prop_assert!(allowed, "{:?} -> {:?}", s, next);
                    s = next;
                }
            }
        }

        #[test]
        fn status_names_round_trip(s in any_status()) {
            prop_assert_eq!(DocumentStatus::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn reviews_decide_once() {
        assert_eq!(
            ReviewStatus::Pending.apply(Action::Approve),
            Some(ReviewStatus::Approved)
        );
        assert_eq!(ReviewStatus::Approved.apply(Action::Reject), None);
        assert_eq!(ReviewStatus::Rejected.apply(Action::Approve), None);
        assert_eq!(ReviewStatus::Pending.apply(Action::Submit), None);
    }
}
