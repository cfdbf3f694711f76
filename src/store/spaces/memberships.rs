//! A caller's memberships: what every authenticated request reads once, before it decides
//! anything (a change of membership holds from the next request on); or, for a route whose
//! checks before its transaction the token alone passes (a vote), what its transaction
//! reads as it begins, in the round trip of its `BEGIN` ([`reading_begin`]): the spaces it
//! declares come from them there, and the memberships come back with its first statement
//! (the setting `kh.memberships`, [`parse_read`]).

use sqlx::{Postgres, Transaction};

use crate::domain::{Access, SpaceRole, SpaceRoles, Subject, TokenRoles, UserId, DEFAULT_SPACE};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

impl PgStore {
    /// The roles of the user `id` and of its `groups` in each space where any of them is a
    /// member: one entry per membership (a space may come more than once).
    pub async fn memberships_of(
        &self,
        id: &UserId,
        groups: &[String],
    ) -> Result<Vec<(String, SpaceRoles)>, StoreError> {
        let subjects = Subject::of_caller(id, groups);
        let rows = sqlx::query!(
            "SELECT space_id, roles FROM space_members WHERE subject = ANY($1)",
            &subjects
        )
        .fetch_all(&self.access_pool)
        .bounded(self)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| (r.space_id, known_roles(&r.roles)))
            .collect())
    }
}

/// The roles among `names` this release knows. The table's CHECK admits only known roles; a
/// name a later release added grants nothing here.
fn known_roles<S: AsRef<str>>(names: &[S]) -> SpaceRoles {
    SpaceRoles::of(names.iter().filter_map(|n| SpaceRole::parse(n.as_ref())))
}

/// The statement that opens a transaction of the caller `id` in `groups` whose token carries
/// `token` roles, reading its memberships by `kh_read_memberships` (migration
/// 20261219000002: a function, so that its plan is kept for the session; the same read
/// inline was parsed and planned at every transaction): `kh.spaces` declares the spaces where it holds a
/// role this release knows (`default` too when its token carries one, as
/// `scope::spaces_of` of the access [`crate::domain::Access::new`] makes), and
/// `kh.memberships` keeps every membership as `space:role|role,...` for [`parse_read`].
/// The subjects are literals: `None` when one holds a control character (the caller's
/// memberships are then read before, the usual way).
pub(crate) fn reading_begin(id: &UserId, groups: &[String], token: TokenRoles) -> Option<String> {
    let subjects = Subject::of_caller(id, groups);
    if subjects.iter().any(|s| s.chars().any(char::is_control)) {
        return None;
    }
    let literals: Vec<String> = subjects.iter().map(|s| literal(s)).collect();
    let known: Vec<&str> = SpaceRole::ALL.iter().map(|r| r.as_str()).collect();
    let own = match token.author || token.reviewer {
        true => format!("'{DEFAULT_SPACE}'"),
        false => "NULL".to_string(),
    };
    Some(format!(
        "BEGIN; SELECT kh_read_memberships(ARRAY[{}]::text[], {own}, '{{{}}}'::text[])",
        literals.join(", "),
        known.join(",")
    ))
}

/// `s` as an escape string literal: its meaning does not hang on the session's
/// `standard_conforming_strings`.
fn literal(s: &str) -> String {
    format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The access a write in `tx` is judged with, when its request left the caller's
/// memberships to its transactions ([`Access::is_unread`]): `access` joined with what `tx`
/// read as it began, which its lock statement handed back (`read`) or, when it did not, a
/// statement of its own reads. `None`: the request read them first, `access` holds.
pub(crate) async fn judged_by_read(
    tx: &mut Transaction<'static, Postgres>,
    access: &Access,
    read: Option<String>,
) -> Result<Option<Access>, StoreError> {
    if !access.is_unread() {
        return Ok(None);
    }
    let read = match read {
        Some(read) => read,
        None => sqlx::query_scalar!(r#"SELECT current_setting('kh.memberships', true) AS "read""#)
            .fetch_one(&mut **tx)
            .await?
            .unwrap_or_default(),
    };
    Ok(Some(access.joined(parse_read(&read))))
}

/// The memberships a transaction opened by [`reading_begin`] read (its `kh.memberships`).
pub(crate) fn parse_read(setting: &str) -> Vec<(String, SpaceRoles)> {
    setting
        .split(',')
        .filter_map(|m| m.split_once(':'))
        .map(|(space, roles)| {
            let names: Vec<&str> = roles.split('|').collect();
            (space.to_string(), known_roles(&names))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_escaped_literals_and_control_characters_are_not_inlined() {
        let id = UserId::parse("o'brien\\").unwrap();
        let token = TokenRoles {
            reviewer: true,
            ..Default::default()
        };
        let begin = reading_begin(&id, &["ops".to_string()], token).unwrap();
        assert!(
            begin.contains(r"ARRAY[E'user:o''brien\\', E'group:ops']"),
            "{begin}"
        );
        assert!(begin.contains("]::text[], 'default', "), "{begin}");
        assert!(begin.contains("'{author,reviewer,space_admin}'"), "{begin}");
        assert_eq!(reading_begin(&id, &["a\0b".to_string()], token), None);
        assert_eq!(reading_begin(&id, &["a\nb".to_string()], token), None);
    }

    #[test]
    fn what_was_read_parses_back_and_unknown_roles_grant_nothing() {
        let read = parse_read("hr:author|reviewer,eng:space_admin,ops:auditor");
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].0, "hr");
        assert_eq!(read[0].1.names(), ["author", "reviewer"]);
        assert_eq!(read[1].1.names(), ["space_admin"]);
        assert!(read[2].1.is_empty());
        assert!(parse_read("").is_empty());
    }
}
