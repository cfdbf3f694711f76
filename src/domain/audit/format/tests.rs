use serde::{Deserialize, Serialize};
use serde_json::json;

use super::*;
use crate::domain::audit::audited::micros;
use crate::domain::audit::{hex, AuditKey, GENESIS};

/// A policy version's row as PostgreSQL's `to_jsonb` gives it (the chain's own columns
/// included, its time in a session's zone).
fn policy_row() -> Value {
    json!({
        "name": "legal", "version": 2, "due_after_secs": null, "claim_ttl_secs": 1800,
        "stages": [{"name": "review", "required_approvals": 2, "eligible_groups": ["legal"]}],
        "created_by": "ada", "created_at": "2026-12-05T12:30:00.123456+01:00",
        "chain_seq": 7, "chain_hash": "\\x00", "chain_format": 2
    })
}

fn bytes(kinds: &AdminKinds, format: Format, row: &Value) -> Vec<u8> {
    let mut buf = Vec::new();
    kinds
        .canonical(&mut buf, "policy", 7, format, &[], row)
        .unwrap();
    buf
}

/// The format after the latest one the policy can be read in.
const LATER: Format = latest::<PolicyRecord>() + 1;

/// The policy's type with one more field, as a later release would have it.
#[derive(Serialize, Deserialize)]
struct PolicyPlus {
    #[serde(flatten)]
    policy: PolicyRecord,
    #[serde(default)]
    min_comment_chars: Option<i32>,
}

impl Audited for PolicyPlus {
    const KIND: &'static str = "policy";
    const ADDED: &'static [(&'static str, Format)] = &[
        ("reverify_after_secs", 3),
        ("reverify_grace_secs", 3),
        ("min_comment_chars", LATER),
    ];
}

#[test]
fn format_2_of_a_policy_is_its_columns_as_sorted_json() {
    let mut buf = Vec::new();
    derived::<PolicyRecord>(&mut buf, 7, DERIVED, &policy_row()).unwrap();
    let json = r#"{"claim_ttl_secs":1800,"created_at":1796470200123456,"created_by":"ada","due_after_secs":null,"name":"legal","stages":[{"eligible_groups":["legal"],"name":"review","required_approvals":2}],"version":2}"#;
    let mut want = Vec::new();
    Canon::start(&mut want, "kh-review/admin/2")
        .text("policy")
        .int(7)
        .text(json);
    assert_eq!(buf, want);
    // Frozen: a release that adds a field links rows in it or a later one.
    let link = AuditKey::new(b"k").link(&GENESIS, &buf);
    assert_eq!(hex(&link), FORMAT_2_LINK);
}

const FORMAT_2_LINK: &str = "967942e0d43af1c0e85397a8af0a0cb83af5531e8b4fc160fb684cc432acd6a4";

#[test]
fn a_field_added_in_a_later_format_leaves_the_earlier_rows_bytes_as_they_were() {
    let today = AdminKinds::default();
    let later = AdminKinds::default().with(AdminKind::of::<PolicyPlus>());
    assert_eq!(later.current("policy").unwrap(), LATER);
    assert_eq!(
        today.current("policy").unwrap(),
        3,
        "re-verification came in format 3"
    );
    let row = policy_row();
    let mut with_column = row.clone();
    with_column["min_comment_chars"] = json!(null);
    assert_eq!(bytes(&later, 2, &row), bytes(&today, 2, &row));
    assert_eq!(bytes(&later, 2, &with_column), bytes(&today, 2, &row));
    with_column["min_comment_chars"] = json!(20);
    assert_eq!(bytes(&later, 3, &with_column), bytes(&today, 3, &row));
    assert_ne!(
        bytes(&later, LATER, &with_column),
        bytes(&later, LATER, &row)
    );
    assert_ne!(
        bytes(&later, 3, &row),
        bytes(&later, 2, &row),
        "the format is in the bytes"
    );
    let mut buf = Vec::new();
    let unknown = today.canonical(&mut buf, "policy", 7, LATER, &[], &with_column);
    assert!(
        matches!(unknown, Err(Unreadable::Format(f)) if f == LATER),
        "{unknown:?}"
    );
}

#[test]
fn the_reverification_columns_leave_the_format_2_rows_bytes_as_they_were() {
    let kinds = AdminKinds::default();
    let row = policy_row();
    let mut with_columns = row.clone();
    with_columns["reverify_after_secs"] = json!(86400);
    with_columns["reverify_grace_secs"] = json!(604800);
    assert_eq!(bytes(&kinds, 2, &with_columns), bytes(&kinds, 2, &row));
    assert_ne!(bytes(&kinds, 3, &with_columns), bytes(&kinds, 3, &row));
    let mut nulls = row.clone();
    nulls["reverify_after_secs"] = json!(null);
    nulls["reverify_grace_secs"] = json!(null);
    assert_eq!(bytes(&kinds, 3, &nulls), bytes(&kinds, 3, &row));
}

#[test]
fn format_1_is_the_listed_columns() {
    let fields = [Some("legal".to_string()), None];
    let mut buf = Vec::new();
    let kinds = AdminKinds::default();
    kinds
        .canonical(&mut buf, "policy", 3, LISTED, &fields, &Value::Null)
        .unwrap();
    let mut want = Vec::new();
    admin_canonical(&mut want, "policy", 3, &fields);
    assert_eq!(buf, want);
    let other = kinds.canonical(&mut buf, "setting", 3, DERIVED, &[], &Value::Null);
    assert!(matches!(other, Err(Unreadable::Kind(_))), "{other:?}");
    let bad = kinds.canonical(&mut buf, "policy", 3, DERIVED, &[], &json!({"name": 1}));
    assert!(matches!(bad, Err(Unreadable::Row(_))), "{bad:?}");
}

#[test]
fn canonical_json_sorts_every_objects_keys() {
    let mut map = serde_json::Map::new();
    map.insert("b".into(), json!([{"z": 1, "a": "é\"\n"}]));
    map.insert("a".into(), json!(null));
    let mut out = String::new();
    canonical_json(&Value::Object(map), &mut out);
    assert_eq!(out, r#"{"a":null,"b":[{"a":"é\"\n","z":1}]}"#);
}

#[test]
fn times_are_microseconds_read_from_either_form() {
    #[derive(Serialize, Deserialize)]
    struct At(#[serde(with = "micros")] chrono::DateTime<chrono::Utc>);
    let text: At = serde_json::from_value(json!("1970-01-01T01:00:00.000001+01:00")).unwrap();
    assert_eq!(serde_json::to_value(&text).unwrap(), json!(1));
    let number: At = serde_json::from_value(json!(1)).unwrap();
    assert_eq!(number.0, text.0);
}

#[test]
fn a_kind_that_arrived_after_formats_reads_in_derived_formats_only() {
    use crate::domain::space_changes::SpaceActionRecord;
    let kinds = AdminKinds::default();
    assert_eq!(kinds.current("space_action").unwrap(), DERIVED);
    assert_eq!(current::<SpaceActionRecord>(), DERIVED);
    let row = json!({
        "id": 4, "space_id": "hr", "action": "space.created", "name": "HR",
        "default_policy": null, "actor_id": "root", "request_id": "r1",
        "at": "2026-12-12T10:00:00.5+00:00", "chain_seq": 3, "chain_hash": null,
        "chain_format": 2
    });
    let mut buf = Vec::new();
    kinds
        .canonical(&mut buf, "space_action", 3, DERIVED, &[], &row)
        .unwrap();
    let json = r#"{"action":"space.created","actor_id":"root","at":1797069600500000,"default_policy":null,"name":"HR","request_id":"r1","space_id":"hr"}"#;
    let mut want = Vec::new();
    Canon::start(&mut want, "kh-review/admin/2")
        .text("space_action")
        .int(3)
        .text(json);
    assert_eq!(buf, want);
    let listed = kinds.canonical(&mut buf, "space_action", 3, LISTED, &[], &row);
    assert!(
        matches!(listed, Err(Unreadable::Format(LISTED))),
        "{listed:?}"
    );
}
