//! Unit tests of checkpoints: the signature and the link to the one before, the walk of a
//! chain against its entry (rewound, rewritten, or intact and grown since), and the chains
//! of a checkpoint found gone as the chains stream past in id order.

use chrono::{TimeZone, Utc};
use uuid::Uuid;

use std::collections::HashMap;

use super::*;
use crate::domain::audit::hex;
use crate::domain::audit::walk::Walk;

/// A chain of `n` rows of made-up bytes: each row's position, link and bytes.
fn chain(key: &AuditKey, n: i64) -> Vec<(i64, Hash, Vec<u8>)> {
    let mut prev = GENESIS;
    (1..=n)
        .map(|seq| {
            let b = vec![seq as u8; 8];
            prev = key.link(&prev, &b);
            (seq, prev, b)
        })
        .collect()
}

/// The walk of `rows` against the head `(count, head)` and the checkpoint's `anchor`.
fn walk(
    key: &AuditKey,
    rows: &[(i64, Hash, Vec<u8>)],
    head: (i64, Option<Hash>),
    anchor: Anchor,
) -> Option<(i64, Found)> {
    let mut w = Walk::new(head.0).anchored(Some(anchor));
    for (seq, link, b) in rows {
        if let Err(e) = w.step(key, *seq, link, b) {
            return Some((e.position, e.found));
        }
    }
    let h = head.1;
    w.finish(h.as_ref().map(|h| &h[..]))
        .err()
        .map(|e| (e.position, e.found))
}

#[test]
fn a_chain_is_checked_against_its_checkpoint_entry() {
    let key = AuditKey::new(b"k");
    let rows = chain(&key, 5);
    let at = |n: usize| (n as i64, Some(rows[n - 1].1));
    let anchor = |n: usize| Anchor {
        count: n as i64,
        head: Some(rows[n - 1].1),
    };
    assert_eq!(walk(&key, &rows, at(5), anchor(5)), None, "as checkpointed");
    assert_eq!(walk(&key, &rows, at(5), anchor(3)), None, "grown since");
    // The tail removed and the head rewound to the row before: the head agrees, the
    // checkpoint does not.
    assert_eq!(
        walk(&key, &rows[..4], at(4), anchor(5)),
        Some((5, Found::Rewound))
    );
    // Rewound, then written on: the row at the checkpoint's count is another.
    let mut other = rows[..3].to_vec();
    let b = vec![99; 8];
    let forged = key.link(&other[2].1, &b);
    other.push((4, forged, b));
    assert_eq!(
        walk(&key, &other, (4, Some(forged)), anchor(4)),
        Some((4, Found::Rewound))
    );
    // A row changed and the rest re-linked without the key: changed, before any anchor.
    let mut changed = rows.clone();
    changed[1].2 = vec![42; 8];
    assert_eq!(
        walk(&key, &changed, at(5), anchor(5)),
        Some((2, Found::Changed))
    );
    let empty = Anchor {
        count: 0,
        head: None,
    };
    assert_eq!(
        walk(&key, &[], (0, None), empty),
        None,
        "no rows then, none now"
    );
}

fn heads(ids: &[u128]) -> Vec<ChainHead> {
    let mut chains: Vec<ChainHead> = ids
        .iter()
        .map(|&i| ChainHead {
            chain: ChainId::Document(Uuid::from_u128(i)),
            count: i as i64,
            head: Some([i as u8; 32]),
        })
        .collect();
    chains.push(ChainHead {
        chain: ChainId::Admin,
        count: 2,
        head: Some([7; 32]),
    });
    chains
}

#[test]
fn a_checkpoint_is_signed_and_linked_to_the_one_before() {
    let key = AuditKey::new(b"k");
    let at = Utc.timestamp_micros(1_700_000_000_000_000).unwrap();
    let first = Checkpoint::seal(&key, 1, at, GENESIS, heads(&[3, 1, 2]));
    assert_eq!(first.chains[0].chain, ChainId::Admin, "sorted: admin first");
    assert_eq!(first.rows(), 8);
    assert_eq!(first.check(&key, None), Ok(()));
    let second = Checkpoint::seal(&key, 2, at, first.link, heads(&[1, 2]));
    assert_eq!(second.check(&key, Some((1, first.link))), Ok(()));
    let broken = |sequence, found| Err(CheckpointBreak { sequence, found });

    // Another key, a count changed, a chain dropped: not what was signed.
    let other = AuditKey::new(b"another key");
    assert_eq!(first.check(&other, None), broken(1, Found::Changed));
    let mut edited = second.clone();
    edited.chains[1].count -= 1;
    assert_eq!(
        edited.check(&key, Some((1, first.link))),
        broken(2, Found::Changed)
    );
    let mut dropped = second.clone();
    dropped.chains.pop();
    assert_eq!(
        dropped.check(&key, Some((1, first.link))),
        broken(2, Found::Changed)
    );
    // The one before removed or replaced: the link does not hold.
    assert_eq!(second.check(&key, None), broken(2, Found::Missing));
    assert_eq!(
        second.check(&key, Some((1, [5; 32]))),
        broken(2, Found::Missing)
    );
    assert_eq!(
        second.check(&key, Some((0, first.link))),
        broken(2, Found::Missing)
    );
    assert_eq!(ChainId::parse("admin"), Some(ChainId::Admin));
    let id = ChainId::Document(Uuid::from_u128(9));
    assert_eq!(ChainId::parse(&id.name()), Some(id));
    assert_eq!(ChainId::parse("nope"), None);
    let space = ChainId::Space("hr-2".to_string());
    assert_eq!(space.name(), "space:hr-2");
    assert_eq!(ChainId::parse("space:hr-2"), Some(space));
    assert_eq!(ChainId::parse("space:"), None);
    assert_eq!(ChainId::parse("space:HR"), None);
}

#[test]
fn space_chains_are_signed_after_the_documents_and_old_checkpoints_keep_their_bytes() {
    let key = AuditKey::new(b"k");
    let at = Utc.timestamp_micros(1_700_000_000_000_000).unwrap();
    // The link of a checkpoint of the admin chain and document 1 (no space chains) as
    // releases before space chains made it: its bytes did not change.
    let old = Checkpoint::seal(&key, 1, at, GENESIS, heads(&[1]));
    assert_eq!(
        hex(&old.link),
        "8de24a1a05e13efaa9502e22a6b53df3783ca2857b4c62bb3892b02612e0e053"
    );
    let mut chains = heads(&[1]);
    chains.push(ChainHead {
        chain: ChainId::Space("hr".to_string()),
        count: 3,
        head: Some([9; 32]),
    });
    let cp = Checkpoint::seal(&key, 1, at, GENESIS, chains);
    assert_eq!(cp.chains[2].chain, ChainId::Space("hr".to_string()), "last");
    assert_eq!(cp.check(&key, None), Ok(()));
    assert_eq!(cp.spaces().get("hr").map(|a| a.count), Some(3));
    assert!(cp.anchors(None).gone().is_some(), "document 1 only");
    let mut renamed = cp.clone();
    renamed.chains[2].chain = ChainId::Space("hq".to_string());
    assert_eq!(
        renamed.check(&key, None),
        Err(CheckpointBreak {
            sequence: 1,
            found: Found::Changed
        })
    );
}

#[test]
fn chains_of_the_checkpoint_not_met_in_id_order_are_gone() {
    let key = AuditKey::new(b"k");
    let cp = Checkpoint::seal(&key, 1, Utc::now(), GENESIS, heads(&[2, 4, 6]));
    assert_eq!(cp.admin().map(|a| a.count), Some(2));
    let doc = |i: u128| Uuid::from_u128(i);
    let mut all = cp.anchors(None);
    assert_eq!(
        all.take(doc(1)),
        Ok(None),
        "a chain newer than the checkpoint"
    );
    assert_eq!(all.take(doc(2)).map(|a| a.map(|a| a.count)), Ok(Some(2)));
    assert_eq!(
        all.take(doc(5)),
        Err(Gone {
            document: doc(4),
            count: 4
        }),
        "4 was never met: deleted"
    );
    let mut tail = cp.anchors(None);
    for i in [2, 4] {
        assert!(tail.take(doc(i)).unwrap().is_some());
    }
    assert_eq!(
        tail.gone(),
        Some(Gone {
            document: doc(6),
            count: 6
        }),
        "the last chain deleted"
    );
    let mut one = cp.anchors(Some(doc(4)));
    assert_eq!(one.take(doc(4)).map(|a| a.map(|a| a.count)), Ok(Some(4)));
    assert_eq!(
        one.gone(),
        None,
        "a one-document check looks at that chain alone"
    );
}

#[test]
fn a_later_checkpoint_keeps_the_entries_of_chains_that_went_back() {
    let key = AuditKey::new(b"k");
    let doc = |i: u128| ChainId::Document(Uuid::from_u128(i));
    let head = |chain, count, h: u8| ChainHead {
        chain,
        count,
        head: Some([h; 32]),
    };
    let prev = Checkpoint::seal(
        &key,
        1,
        Utc::now(),
        GENESIS,
        vec![
            head(ChainId::Admin, 2, 2),
            head(doc(1), 3, 13),
            head(doc(2), 3, 23),
            head(doc(3), 3, 33),
            head(doc(4), 3, 43),
            head(doc(5), 3, 53),
        ],
    );
    let now = vec![
        head(ChainId::Admin, 2, 2), // as it was
        head(doc(1), 5, 15),        // grown, row 3 is the one checkpointed
        head(doc(2), 5, 25),        // grown, but row 3 is another
        head(doc(3), 2, 32),        // rewound
        head(doc(4), 3, 99),        // same count, another head
        head(doc(6), 1, 61),        // new
    ];
    let looked = to_look_up(&prev, &now);
    assert_eq!(looked, [(doc(1), 3), (doc(2), 3)]);
    let linked: HashMap<ChainId, Hash> = [(doc(1), [13; 32]), (doc(2), [77; 32])].into();
    let (chains, kept) = follow(&prev, now, &linked);
    let count_of = |c| {
        chains
            .iter()
            .find(|h| h.chain == c)
            .map(|h| (h.count, h.head))
    };
    assert_eq!(
        count_of(doc(1)),
        Some((5, Some([15; 32]))),
        "extends: as it is now"
    );
    assert_eq!(count_of(doc(2)), Some((3, Some([23; 32]))), "kept");
    assert_eq!(count_of(doc(3)), Some((3, Some([33; 32]))), "kept");
    assert_eq!(count_of(doc(4)), Some((3, Some([43; 32]))), "kept");
    assert_eq!(count_of(doc(5)), Some((3, Some([53; 32]))), "gone: kept");
    assert_eq!(count_of(doc(6)), Some((1, Some([61; 32]))), "new");
    let mut kinds: Vec<(ChainId, Found)> =
        kept.iter().map(|k| (k.chain.clone(), k.found)).collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        [
            (doc(2), Found::Rewound),
            (doc(3), Found::Rewound),
            (doc(4), Found::Rewound),
            (doc(5), Found::ChainMissing)
        ]
    );
}
