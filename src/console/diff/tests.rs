use super::*;
use crate::domain::diff::lines;

type Shown<'a> = (Option<(usize, &'a str)>, Option<(usize, &'a str)>, bool);

fn shown<'a>(rows: &[Row<'a>]) -> Vec<Shown<'a>> {
    let side = |c: Option<Cell<'a>>| c.map(|c| (c.no, c.text));
    rows.iter()
        .map(|r| (side(r.old), side(r.new), r.changed))
        .collect()
}

#[test]
fn side_by_side_pairs_a_change_and_numbers_each_side() {
    let d = lines("a\nb\nc\nd", "a\nB\nB2\nd\ne");
    assert_eq!(
        shown(&side_by_side(&d)),
        [
            (Some((1, "a")), Some((1, "a")), false),
            (Some((2, "b")), Some((2, "B")), true),
            (Some((3, "c")), Some((3, "B2")), true),
            (Some((4, "d")), Some((4, "d")), false),
            (None, Some((5, "e")), true),
        ]
    );
    let d = lines("a\nb\nc\nend", "x\nend");
    assert_eq!(
        shown(&side_by_side(&d)),
        [
            (Some((1, "a")), Some((1, "x")), true),
            (Some((2, "b")), None, true),
            (Some((3, "c")), None, true),
            (Some((4, "end")), Some((2, "end")), false),
        ]
    );
}

#[test]
fn a_replaced_line_carries_its_marked_words_to_both_sides() {
    let d = lines("Restart the indexer now.", "Restart both indexers now.");
    let rows = side_by_side(&d);
    assert_eq!(rows.len(), 1);
    let changed = |c: Option<Cell<'_>>| -> String {
        let words = c.and_then(|c| c.words).expect("marked words");
        words
            .iter()
            .filter(|w| w.changed)
            .map(|w| w.text.as_str())
            .collect()
    };
    assert!(changed(rows[0].old).contains("the"), "{rows:?}");
    assert!(changed(rows[0].new).contains("both"), "{rows:?}");
}

#[test]
fn a_large_body_with_one_change_pairs_every_other_line() {
    // The hand-written table this replaced gave up past a million cells (1,001 lines a side)
    // and showed the whole middle as removed and added.
    let long: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
    let edited = long.replace("line 2500\n", "line 2500, edited\n");
    let d = lines(&long, &edited);
    let rows = side_by_side(&d);
    assert_eq!(rows.iter().filter(|r| r.changed).count(), 1);
    assert_eq!(rows.len(), 5_000);
}
