//! Review policies: what a review needs before its document is approved. A policy is a list
//! of ordered stages, each needing some approvals from reviewers of some groups; it may set
//! a due date and how long a claim lasts. Policies are versioned: a review keeps the version
//! current at its submit.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::audited::Audited;
use super::inputs::InputError;

/// The built-in policy: one stage, one approval, any reviewer, no due date.
pub const DEFAULT_POLICY: &str = "default";
pub const MAX_STAGES: usize = 10;
pub const MAX_APPROVALS: u8 = 5;
pub const MAX_GROUPS: usize = 20;
pub const CLAIM_TTL_SECS: std::ops::RangeInclusive<i32> = 60..=86_400;
pub const DUE_AFTER_SECS: std::ops::RangeInclusive<i32> = 1..=31_536_000;
pub const DEFAULT_CLAIM_TTL_SECS: i32 = 1800;
/// An approval holds for 1 minute to 5 years before it is due for re-verification.
pub const REVERIFY_AFTER_SECS: std::ops::RangeInclusive<i32> = 60..=157_680_000;
/// A re-verification may stay undecided for 1 minute to a year before the document expires.
pub const REVERIFY_GRACE_SECS: std::ops::RangeInclusive<i32> = 60..=31_536_000;
/// The grace of a policy that sets `reverify_after_secs` without one: a week.
pub const DEFAULT_REVERIFY_GRACE_SECS: i32 = 604_800;

/// One stage of a policy. `eligible_groups` empty: any reviewer may vote in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    pub name: String,
    pub required_approvals: u8,
    #[serde(default)]
    pub eligible_groups: Vec<String>,
}

impl Stage {
    /// The stage of the built-in policy (and of reviews recorded before policies existed).
    pub fn default_stage() -> Self {
        Self {
            name: "review".into(),
            required_approvals: 1,
            eligible_groups: Vec::new(),
        }
    }

    /// Whether a caller in `groups` may vote in this stage.
    pub fn admits(&self, groups: &[String]) -> bool {
        self.eligible_groups.is_empty() || self.eligible_groups.iter().any(|g| groups.contains(g))
    }
}

/// A version of a policy, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub name: String,
    pub version: i32,
    pub stages: Vec<Stage>,
    pub due_after_secs: Option<i32>,
    pub claim_ttl_secs: i32,
    /// An approval under this version is due for re-verification this long after it.
    #[serde(default)]
    pub reverify_after_secs: Option<i32>,
    /// How long a re-verification may stay undecided before its document expires.
    #[serde(default)]
    pub reverify_grace_secs: Option<i32>,
    pub updated_at: DateTime<Utc>,
}

/// A version of a policy as the admin chain covers it: the columns of its
/// `policy_versions` row but the chain's own (`chain_seq`, `chain_hash`, `chain_format`).
/// A column added to the table is a field here, and an entry of `ADDED` with the next
/// format (see `audit_format`). The stages are kept as stored, so that a field added to
/// [`Stage`] changes no linked row's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub name: String,
    pub version: i32,
    pub stages: serde_json::Value,
    pub due_after_secs: Option<i32>,
    pub claim_ttl_secs: i32,
    pub created_by: String,
    #[serde(with = "super::audit::audited::micros")]
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub reverify_after_secs: Option<i32>,
    #[serde(default)]
    pub reverify_grace_secs: Option<i32>,
}

impl Audited for PolicyRecord {
    const KIND: &'static str = "policy";
    const ADDED: &'static [(&'static str, super::audit::audited::Format)] =
        &[("reverify_after_secs", 3), ("reverify_grace_secs", 3)];
}

/// A policy's name: 1 to 64 of `a-z`, `0-9`, `_` and `-`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyName(String);

impl PolicyName {
    pub fn parse(s: &str) -> Result<Self, InputError> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().enumerate().all(|(i, b)| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || (i > 0 && matches!(b, b'_' | b'-'))
            });
        if !ok {
            return Err(InputError {
                field: "policy",
                problem:
                    "must be 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit"
                        .into(),
            });
        }
        Ok(Self(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an admin writes: checked, ready to be stored as the policy's next version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDraft {
    pub stages: Vec<Stage>,
    pub due_after_secs: Option<i32>,
    pub claim_ttl_secs: i32,
    pub reverify: Reverify,
}

/// A policy's re-verification: none, or an approval due again `after_secs` after it, with
/// `grace_secs` for a reviewer to re-verify it before the document expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reverify {
    pub after_secs: Option<i32>,
    pub grace_secs: Option<i32>,
}

impl Reverify {
    /// `after` and `grace` as written: each in its range, a grace only with an `after`
    /// (a week when left out).
    pub fn parse(after: Option<i64>, grace: Option<i64>) -> Result<Self, InputError> {
        let after_secs = after
            .map(|v| in_range("reverify_after_secs", v, &REVERIFY_AFTER_SECS))
            .transpose()?;
        let grace_secs = grace
            .map(|v| in_range("reverify_grace_secs", v, &REVERIFY_GRACE_SECS))
            .transpose()?;
        match (after_secs, grace_secs) {
            (None, Some(_)) => Err(invalid(
                "reverify_grace_secs",
                "needs reverify_after_secs: without it nothing is re-verified",
            )),
            (Some(_), None) => Ok(Self {
                after_secs,
                grace_secs: Some(DEFAULT_REVERIFY_GRACE_SECS),
            }),
            _ => Ok(Self {
                after_secs,
                grace_secs,
            }),
        }
    }
}

/// `v` as an `i32` in `r`, or what is wrong with `field`.
fn in_range(
    field: &'static str,
    v: i64,
    r: &std::ops::RangeInclusive<i32>,
) -> Result<i32, InputError> {
    i32::try_from(v)
        .ok()
        .filter(|v| r.contains(v))
        .ok_or_else(|| invalid(field, format!("must be {} to {}", r.start(), r.end())))
}

fn invalid(field: &'static str, problem: impl Into<String>) -> InputError {
    InputError {
        field,
        problem: problem.into(),
    }
}

impl PolicyDraft {
    /// Checks a policy as written: stages (1 to 10, names unique and not blank, 1 to 5
    /// approvals, groups not blank), `due_after_secs` and `claim_ttl_secs` in their ranges.
    pub fn parse(
        stages: Vec<Stage>,
        due_after_secs: Option<i64>,
        claim_ttl_secs: Option<i64>,
        reverify: Reverify,
    ) -> Result<Self, InputError> {
        if stages.is_empty() || stages.len() > MAX_STAGES {
            return Err(invalid(
                "stages",
                format!("must hold 1 to {MAX_STAGES} stages"),
            ));
        }
        let mut checked: Vec<Stage> = Vec::with_capacity(stages.len());
        for stage in stages {
            checked.push(check_stage(stage, &checked)?);
        }
        let due_after_secs = due_after_secs
            .map(|v| in_range("due_after_secs", v, &DUE_AFTER_SECS))
            .transpose()?;
        let claim_ttl_secs = claim_ttl_secs
            .map(|v| in_range("claim_ttl_secs", v, &CLAIM_TTL_SECS))
            .transpose()?
            .unwrap_or(DEFAULT_CLAIM_TTL_SECS);
        Ok(Self {
            stages: checked,
            due_after_secs,
            claim_ttl_secs,
            reverify,
        })
    }
}

fn check_stage(stage: Stage, before: &[Stage]) -> Result<Stage, InputError> {
    let name = stage.name.trim().to_string();
    let control = stage.name.chars().any(char::is_control); // even where the trim drops it
    if name.is_empty() || name.chars().count() > 64 || control {
        return Err(invalid(
            "stages.name",
            "must be 1 to 64 characters, not blank",
        ));
    }
    if before.iter().any(|s| s.name == name) {
        return Err(invalid("stages.name", format!("{name:?} names two stages")));
    }
    if !(1..=MAX_APPROVALS).contains(&stage.required_approvals) {
        return Err(invalid(
            "stages.required_approvals",
            format!("must be 1 to {MAX_APPROVALS}"),
        ));
    }
    if stage.eligible_groups.len() > MAX_GROUPS {
        return Err(invalid(
            "stages.eligible_groups",
            format!("must hold at most {MAX_GROUPS} groups"),
        ));
    }
    let mut groups = Vec::with_capacity(stage.eligible_groups.len());
    for g in stage.eligible_groups {
        let g = g.trim().to_string();
        if g.is_empty() || g.chars().count() > 256 || g.chars().any(char::is_control) {
            return Err(invalid(
                "stages.eligible_groups",
                "each group must be 1 to 256 characters, not blank",
            ));
        }
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    Ok(Stage {
        name,
        required_approvals: stage.required_approvals,
        eligible_groups: groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(name: &str, n: u8) -> Stage {
        Stage {
            name: name.into(),
            required_approvals: n,
            eligible_groups: vec![],
        }
    }

    #[test]
    fn bad_policies_name_their_field() {
        let field = |r: Result<PolicyDraft, InputError>| r.unwrap_err().field;
        assert_eq!(
            field(PolicyDraft::parse(vec![], None, None, Reverify::default())),
            "stages"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("a", 0)],
                None,
                None,
                Reverify::default()
            )),
            "stages.required_approvals"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("a", 6)],
                None,
                None,
                Reverify::default()
            )),
            "stages.required_approvals"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("  ", 1)],
                None,
                None,
                Reverify::default()
            )),
            "stages.name"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("a", 1), stage(" a", 2)],
                None,
                None,
                Reverify::default()
            )),
            "stages.name"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("a", 1)],
                Some(0),
                None,
                Reverify::default()
            )),
            "due_after_secs"
        );
        assert_eq!(
            field(PolicyDraft::parse(
                vec![stage("a", 1)],
                None,
                Some(59),
                Reverify::default()
            )),
            "claim_ttl_secs"
        );
        let ok = PolicyDraft::parse(
            vec![stage(" legal ", 2)],
            Some(3600),
            None,
            Reverify::default(),
        )
        .unwrap();
        assert_eq!(ok.stages[0].name, "legal");
        assert_eq!(ok.claim_ttl_secs, DEFAULT_CLAIM_TTL_SECS);
    }

    #[test]
    fn reverification_in_its_ranges_with_a_week_of_grace_by_default() {
        let field = |r: Result<Reverify, InputError>| r.unwrap_err().field;
        assert_eq!(
            field(Reverify::parse(Some(59), None)),
            "reverify_after_secs"
        );
        assert_eq!(
            field(Reverify::parse(Some(157_680_001), None)),
            "reverify_after_secs"
        );
        assert_eq!(
            field(Reverify::parse(Some(60), Some(59))),
            "reverify_grace_secs"
        );
        assert_eq!(
            field(Reverify::parse(None, Some(600))),
            "reverify_grace_secs"
        );
        assert_eq!(Reverify::parse(None, None).unwrap(), Reverify::default());
        let r = Reverify::parse(Some(86_400), None).unwrap();
        assert_eq!(r.after_secs, Some(86_400));
        assert_eq!(r.grace_secs, Some(DEFAULT_REVERIFY_GRACE_SECS));
        let r = Reverify::parse(Some(86_400), Some(600)).unwrap();
        assert_eq!(r.grace_secs, Some(600));
    }

    #[test]
    fn names_and_groups() {
        assert!(PolicyName::parse("legal-2").is_ok());
        for bad in ["", "Legal", "-a", "a b", &"a".repeat(65)] {
            assert!(PolicyName::parse(bad).is_err(), "{bad}");
        }
        let legal = Stage {
            eligible_groups: vec!["legal".into()],
            ..stage("l", 1)
        };
        assert!(legal.admits(&["legal".into()]));
        assert!(!legal.admits(&["ops".into()]));
        assert!(stage("any", 1).admits(&[]));
    }
}
