use proptest::prelude::*;

use super::*;

fn ops(old: &str, new: &str) -> Vec<(Op, String)> {
    lines(old, new)
        .into_iter()
        .map(|l| (l.op, l.text.to_string()))
        .collect()
}

/// The old text is the lines not inserted, the new one the lines not deleted.
fn rebuilds(old: &str, new: &str) {
    let d = lines(old, new);
    let side = |skip: Op| {
        d.iter()
            .filter(|l| l.op != skip)
            .map(|l| l.text)
            .collect::<Vec<_>>()
    };
    assert_eq!(side(Op::Insert), old.lines().collect::<Vec<_>>());
    assert_eq!(side(Op::Delete), new.lines().collect::<Vec<_>>());
}

#[test]
fn a_changed_line_is_deleted_then_inserted_with_its_words_marked() {
    let d = lines(
        "Intro\nStep one, then two.\nEnd",
        "Intro\nStep one, then three.\nEnd",
    );
    assert_eq!(
        d.iter()
            .map(|l| (l.op, l.old_no, l.new_no))
            .collect::<Vec<_>>(),
        [
            (Op::Equal, Some(1), Some(1)),
            (Op::Delete, Some(2), None),
            (Op::Insert, None, Some(2)),
            (Op::Equal, Some(3), Some(3)),
        ]
    );
    let changed = |l: &Line<'_>| -> Vec<String> {
        let words = l.words.as_ref().expect("marked words");
        words
            .iter()
            .filter(|w| w.changed)
            .map(|w| w.text.clone())
            .collect()
    };
    assert_eq!(changed(&d[1]), ["two."]);
    assert_eq!(changed(&d[2]), ["three."]);
    // The words rebuild the line.
    let whole: String = d[2]
        .words
        .as_ref()
        .unwrap()
        .iter()
        .map(|w| w.text.as_str())
        .collect();
    assert_eq!(whole, "Step one, then three.");
}

#[test]
fn equal_texts_have_no_hunks_and_line_endings_do_not_count() {
    assert!(hunks(&lines("a\nb\n", "a\r\nb"), CONTEXT_LINES).is_empty());
    assert_eq!(ops("", ""), []);
}

#[test]
fn hunks_keep_three_lines_of_context_and_merge_close_changes() {
    let old: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
    let mut new = old.clone();
    new[4] = "line five".into(); // line 5
    new[8] = "line nine".into(); // line 9: within 2 * 3 of line 5, one hunk
    new.remove(17); // line 18: a hunk of its own
    let (old, new) = (old.join("\n"), new.join("\n"));
    let d = lines(&old, &new);
    let h = hunks(&d, CONTEXT_LINES);
    let heads: Vec<_> = h
        .iter()
        .map(|h| (h.from_line, h.from_count, h.to_line, h.to_count))
        .collect();
    assert_eq!(heads, [(2, 11, 2, 11), (15, 6, 15, 5)]);
    let text = unified(&h, "v3", "v5");
    assert!(
        text.starts_with("--- v3\n+++ v5\n@@ -2,11 +2,11 @@\n line 2\n"),
        "{text}"
    );
    assert!(text.contains("\n-line 5\n+line five\n"), "{text}");
    assert!(text.contains("@@ -15,6 +15,5 @@\n"), "{text}");
    assert!(text.contains("\n-line 18\n"), "{text}");
}

#[test]
fn a_hunk_at_the_start_of_an_empty_side_starts_at_zero() {
    let h = hunks(&lines("", "one\ntwo"), CONTEXT_LINES);
    assert_eq!(
        (h[0].from_line, h[0].from_count, h[0].to_line, h[0].to_count),
        (0, 0, 1, 2)
    );
    assert_eq!(
        unified(&h, "a", "b"),
        "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    );
    let h = hunks(&lines("one", ""), CONTEXT_LINES);
    assert_eq!(unified(&h, "a", "b"), "--- a\n+++ b\n@@ -1 +0,0 @@\n-one\n");
}

#[test]
fn large_texts_with_few_changes_diff_quickly_and_exactly() {
    // 2 MiB of 45,000 lines, 1% of them changed: no cliff, every unchanged line matched.
    let old: Vec<String> = (0..45_000)
        .map(|i| format!("{i:>8} lorem ipsum dolor sit amet consectetur ad"))
        .collect();
    let mut new = old.clone();
    for i in (0..45_000).step_by(100) {
        new[i] = format!("{i:>8} changed");
    }
    let (old, new) = (old.join("\n"), new.join("\n"));
    assert!(old.len() >= 2 << 20, "{}", old.len());
    let d = lines(&old, &new);
    assert_eq!(counts(&d), (450, 450));
}

proptest! {
    #[test]
    fn any_pair_of_texts_rebuilds_from_its_diff(
        old in proptest::collection::vec("[abc ]{0,3}", 0..12),
        new in proptest::collection::vec("[abc ]{0,3}", 0..12),
    ) {
        rebuilds(&old.join("\n"), &new.join("\n"));
    }

    #[test]
    fn hunks_cover_every_change_and_count_their_lines(
        old in proptest::collection::vec("[ab]", 0..30),
        new in proptest::collection::vec("[ab]", 0..30),
    ) {
        let (old, new) = (old.join("\n"), new.join("\n"));
        let d = lines(&old, &new);
        let h = hunks(&d, 2);
        let changed = |ls: &[Line<'_>]| ls.iter().filter(|l| l.op != Op::Equal).count();
        prop_assert_eq!(h.iter().map(|h| changed(&h.lines)).sum::<usize>(), changed(&d));
        for h in &h {
            prop_assert_eq!(h.from_count, h.lines.iter().filter(|l| l.op != Op::Insert).count());
            prop_assert_eq!(h.to_count, h.lines.iter().filter(|l| l.op != Op::Delete).count());
            if let Some(first) = h.lines.iter().find_map(|l| l.old_no) { prop_assert_eq!(first, h.from_line); }
            if let Some(first) = h.lines.iter().find_map(|l| l.new_no) { prop_assert_eq!(first, h.to_line); }
        }
    }
}
