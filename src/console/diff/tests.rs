use super::*;
use Change::{Added, Removed, Same};

fn ops(old: &str, new: &str) -> Vec<(Change, String)> {
    let d = lines(old, new);
    assert!(d.exact, "{old:?} -> {new:?} is matched line by line");
    d.lines
        .into_iter()
        .map(|(c, l)| (c, l.to_string()))
        .collect()
}

fn owned(v: &[(Change, &str)]) -> Vec<(Change, String)> {
    v.iter().map(|(c, l)| (*c, l.to_string())).collect()
}

/// The old text is the lines not added, the new one the lines not removed.
fn rebuilds(old: &str, new: &str) {
    let d = lines(old, new);
    let side = |skip: Change| -> Vec<&str> {
        d.lines
            .iter()
            .filter(|(c, _)| *c != skip)
            .map(|(_, l)| *l)
            .collect()
    };
    assert_eq!(side(Added), old.lines().collect::<Vec<_>>(), "{old:?}");
    assert_eq!(side(Removed), new.lines().collect::<Vec<_>>(), "{new:?}");
}

#[test]
fn equal_texts_are_all_the_same() {
    assert_eq!(ops("a\nb\n", "a\nb"), owned(&[(Same, "a"), (Same, "b")]));
    assert_eq!(ops("", ""), owned(&[]));
    assert_eq!(lines("x\ny", "x\ny").counts(), (0, 0));
}

#[test]
fn a_changed_line_is_removed_then_added() {
    assert_eq!(
        ops("one\ntwo\nthree", "one\n2\nthree"),
        owned(&[
            (Same, "one"),
            (Removed, "two"),
            (Added, "2"),
            (Same, "three")
        ])
    );
}

#[test]
fn inserted_and_deleted_lines_keep_the_rest_matched() {
    assert_eq!(
        ops("a\nb\nc\nd", "a\nc\nd\ne"),
        owned(&[
            (Same, "a"),
            (Removed, "b"),
            (Same, "c"),
            (Same, "d"),
            (Added, "e")
        ])
    );
    assert_eq!(ops("", "new"), owned(&[(Added, "new")]));
    assert_eq!(ops("old", ""), owned(&[(Removed, "old")]));
}

#[test]
fn the_longest_common_subsequence_is_kept() {
    // Prefix and suffix differ, so the middle is matched by the table: x, y, z stay.
    let d = lines("1\nx\n2\ny\n3\nz\n4", "a\nx\nb\ny\nc\nz\nd");
    let same: Vec<&str> = d
        .lines
        .iter()
        .filter(|(c, _)| *c == Same)
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(same, ["x", "y", "z"]);
    assert_eq!(d.counts(), (4, 4));
    rebuilds("1\nx\n2\ny\n3\nz\n4", "a\nx\nb\ny\nc\nz\nd");
}

#[test]
fn any_pair_of_texts_rebuilds_from_its_diff() {
    let texts = [
        "",
        "a",
        "a\nb\nc",
        "c\nb\na",
        "a\na\na",
        "a\nb\na\nb",
        "b\n\nb",
        "x\r\ny",
    ];
    for old in texts {
        for new in texts {
            rebuilds(old, new);
        }
    }
}

#[test]
fn a_middle_too_large_reads_as_removed_and_added_whole() {
    let old: String = (0..1200).map(|i| format!("old {i}\n")).collect();
    let new: String = (0..1200).map(|i| format!("new {i}\n")).collect();
    let (old, new) = (format!("top\n{old}end"), format!("top\n{new}end"));
    let d = lines(&old, &new);
    assert!(!d.exact, "1201 x 1201 cells is over the bound");
    assert_eq!(d.counts(), (1200, 1200));
    assert_eq!(d.lines.first(), Some(&(Same, "top")));
    assert_eq!(d.lines.last(), Some(&(Same, "end")));
    rebuilds(&old, &new);
    // Long texts with a small change stay exact: prefix and suffix are matched first.
    let long: String = (0..100_000).map(|i| format!("{i}\n")).collect();
    let edited = long.replacen("5000\n", "five thousand\n", 1);
    let d = lines(&long, &edited);
    assert!(d.exact);
    assert_eq!(d.counts(), (1, 1));
}

type Shown<'a> = (Option<(usize, &'a str)>, Option<(usize, &'a str)>, bool);

fn shown<'a>(rows: &[Row<'a>]) -> Vec<Shown<'a>> {
    rows.iter().map(|r| (r.old, r.new, r.changed)).collect()
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

/// The longest common subsequence of `a` and `b`, by trying every subsequence of `a`.
fn brute_lcs(a: &[&str], b: &[&str]) -> usize {
    let is_sub = |pick: &[&str]| {
        let mut it = b.iter();
        pick.iter().all(|p| it.any(|x| x == p))
    };
    (0u32..1 << a.len())
        .map(|mask| {
            let pick: Vec<&str> = (0..a.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| a[i])
                .collect();
            if is_sub(&pick) {
                pick.len()
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn the_kept_lines_are_a_longest_common_subsequence() {
    // Small texts of the lines x, y and z, from a fixed pseudo-random sequence.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _ in 0..500 {
        let mut text = |len: u64| -> String {
            let n = next(len + 1);
            (0..n)
                .map(|_| ["x", "y", "z"][next(3) as usize])
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (old, new) = (text(7), text(7));
        let d = lines(&old, &new);
        let a: Vec<&str> = old.lines().collect();
        let b: Vec<&str> = new.lines().collect();
        let same = d.lines.iter().filter(|(c, _)| *c == Same).count();
        assert_eq!(same, brute_lcs(&a, &b), "{old:?} -> {new:?}");
        rebuilds(&old, &new);
    }
}
