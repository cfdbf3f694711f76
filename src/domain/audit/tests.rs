//! Unit tests of the audit chain: canonical bytes (distinct rows, distinct bytes) and the
//! walk that checks a chain (each kind of break found, at its position).

use chrono::{TimeZone, Utc};
use uuid::Uuid;

use super::*;
use crate::domain::audit::walk::{Found, Walk};

fn row() -> AuditRow<'static> {
    AuditRow {
        document_id: Uuid::from_u128(7),
        seq: 1,
        review_id: None,
        action: "submit",
        actor_id: "alice",
        from_status: Some("DRAFT"),
        to_status: "PENDING_REVIEW",
        document_version: 2,
        request_id: Some("req-1"),
        lock_mode: "redis",
        fence_token: Some(5),
        at: Utc.timestamp_micros(1_700_000_000_123_456).unwrap(),
    }
}

fn bytes(r: &AuditRow<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    r.canonical(&mut buf);
    buf
}

#[test]
fn each_column_that_matters_changes_the_bytes() {
    let base = row();
    let variants = [
        AuditRow {
            document_id: Uuid::from_u128(8),
            ..base.clone()
        },
        AuditRow {
            seq: 2,
            ..base.clone()
        },
        AuditRow {
            review_id: Some(Uuid::nil()),
            ..base.clone()
        },
        AuditRow {
            action: "approve",
            ..base.clone()
        },
        AuditRow {
            actor_id: "mallory",
            ..base.clone()
        },
        AuditRow {
            from_status: None,
            ..base.clone()
        },
        AuditRow {
            to_status: "DRAFT",
            ..base.clone()
        },
        AuditRow {
            document_version: 3,
            ..base.clone()
        },
        AuditRow {
            request_id: None,
            ..base.clone()
        },
        AuditRow {
            lock_mode: "row_lock_only",
            ..base.clone()
        },
        AuditRow {
            fence_token: None,
            ..base.clone()
        },
        AuditRow {
            at: base.at + chrono::Duration::microseconds(1),
            ..base.clone()
        },
    ];
    let mut seen = vec![bytes(&base)];
    for v in &variants {
        let b = bytes(v);
        assert!(!seen.contains(&b), "{v:?} encodes like another row");
        seen.push(b);
    }
}

#[test]
fn text_is_length_prefixed_so_moving_a_boundary_changes_the_bytes() {
    let a = AuditRow {
        action: "ab",
        actor_id: "c",
        ..row()
    };
    let b = AuditRow {
        action: "a",
        actor_id: "bc",
        ..row()
    };
    assert_ne!(bytes(&a), bytes(&b));
    // An absent optional text differs from an empty one.
    let none = AuditRow {
        request_id: None,
        ..row()
    };
    let empty = AuditRow {
        request_id: Some(""),
        ..row()
    };
    assert_ne!(bytes(&none), bytes(&empty));
}

#[test]
fn admin_rows_of_two_kinds_or_two_splits_encode_apart() {
    let mut a = Vec::new();
    let mut b = Vec::new();
    let f = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
    admin_canonical(&mut a, "policy", 1, &f(&["ab", "c"]));
    admin_canonical(&mut b, "policy", 1, &f(&["a", "bc"]));
    assert_ne!(a, b);
    admin_canonical(&mut b, "outbox_action", 1, &f(&["ab", "c"]));
    assert_ne!(a, b);
    admin_canonical(
        &mut b,
        "policy",
        1,
        &[Some("ab".into()), Some("c".into()), None],
    );
    assert_ne!(a, b, "a trailing NULL column counts");
}

#[test]
fn a_link_depends_on_the_key_the_previous_link_and_the_bytes() {
    let (k1, k2) = (AuditKey::new(b"key one"), AuditKey::new(b"key two"));
    let b = bytes(&row());
    let l = k1.link(&GENESIS, &b);
    assert_eq!(l, k1.link(&GENESIS, &b), "deterministic");
    assert_ne!(l, k2.link(&GENESIS, &b), "another key");
    assert_ne!(l, k1.link(&l, &b), "another previous link");
    assert_ne!(l, k1.link(&GENESIS, &b[1..]), "other bytes");
    assert_eq!(hex(&[0, 15, 255]), "000fff");
}

/// A chain of `n` rows: each row's bytes and stored link, and the head.
fn chain(key: &AuditKey, n: i64) -> (Vec<(i64, Hash, Vec<u8>)>, Hash) {
    let mut prev = GENESIS;
    let rows = (1..=n)
        .map(|seq| {
            let b = bytes(&AuditRow { seq, ..row() });
            prev = key.link(&prev, &b);
            (seq, prev, b)
        })
        .collect();
    (rows, prev)
}

fn walk(
    key: &AuditKey,
    count: i64,
    head: Option<&Hash>,
    rows: &[(i64, Hash, Vec<u8>)],
) -> Option<(i64, Found)> {
    let mut w = Walk::new(count);
    for (seq, link, b) in rows {
        if let Err(e) = w.step(key, *seq, link, b) {
            return Some((e.position, e.found));
        }
    }
    w.finish(head.map(|h| h.as_slice()))
        .err()
        .map(|e| (e.position, e.found))
}

#[test]
fn an_intact_chain_holds_and_each_break_is_found_where_it_is() {
    let key = AuditKey::new(b"k");
    let (rows, head) = chain(&key, 5);
    assert_eq!(walk(&key, 5, Some(&head), &rows), None);
    assert_eq!(walk(&key, 0, None, &[]), None, "no rows, no head");

    let mut changed = rows.clone();
    changed[2].2 = bytes(&AuditRow {
        seq: 3,
        actor_id: "mallory",
        ..row()
    });
    assert_eq!(
        walk(&key, 5, Some(&head), &changed),
        Some((3, Found::Changed))
    );

    let mut missing = rows.clone();
    missing.remove(1);
    assert_eq!(
        walk(&key, 5, Some(&head), &missing),
        Some((2, Found::Missing))
    );

    let tail = &rows[..4];
    assert_eq!(
        walk(&key, 5, Some(&head), tail),
        Some((5, Found::TailMissing))
    );

    let mut inserted = rows.clone();
    inserted.push((6, [1; 32], vec![1, 2, 3]));
    assert_eq!(
        walk(&key, 5, Some(&head), &inserted),
        Some((6, Found::Inserted))
    );
    let mut doubled = rows.clone();
    doubled.insert(2, (2, [1; 32], vec![1]));
    assert_eq!(
        walk(&key, 5, Some(&head), &doubled),
        Some((2, Found::Inserted))
    );

    assert_eq!(
        walk(&key, 5, Some(&[9; 32]), &rows),
        Some((5, Found::HeadChanged))
    );
    assert_eq!(
        walk(&AuditKey::new(b"another key"), 5, Some(&head), &rows),
        Some((1, Found::Changed)),
        "rows linked with another key"
    );
}

#[test]
fn the_walk_s_head_is_where_the_next_row_links() {
    let key = AuditKey::new(b"k");
    let (rows, head) = chain(&key, 3);
    let mut w = Walk::new(3);
    for (seq, link, b) in &rows {
        w.step(&key, *seq, link, b).unwrap();
    }
    assert_eq!(w.head(), (3, head));
}
