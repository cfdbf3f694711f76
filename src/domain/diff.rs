//! What changed between two texts (the published and the working copy of a document, or any
//! two versions it holds), for `GET /documents/{id}/diff` and the console alike: every line
//! with what became of it, word-level marks inside the lines a change replaced, and the
//! hunks of a unified diff around the changes.
//!
//! Lines are matched by Myers' algorithm (the `similar` crate), which costs in proportion to
//! the number of changes, not to the product of the texts' lengths: two bodies of the
//! largest size with a few changes compare in milliseconds. A pair of texts so different
//! that matching takes longer than [`TIME_BUDGET`] is matched approximately from then on
//! (still a correct diff: the lines removed and added rebuild both texts, only not the
//! fewest). Lines compare without their line endings.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use similar::{Algorithm, ChangeTag, DiffOp, DiffTag, TextDiff};

/// How long the matching of one pair of texts may take before it settles for a larger diff.
pub const TIME_BUDGET: Duration = Duration::from_millis(300);

/// The unchanged lines a hunk shows on each side of a change.
pub const CONTEXT_LINES: usize = 3;

/// What became of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// In both texts.
    Equal,
    /// In the new text only.
    Insert,
    /// In the old text only.
    Delete,
}

/// A run of a changed line's text, `changed` when it differs from the line it replaced (or
/// replaced by).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Word {
    pub text: String,
    pub changed: bool,
}

/// A line of either text: what became of it, its text, its number in the old text and in the
/// new one (from 1), and, for a line a change replaced, its words marked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    pub op: Op,
    pub text: &'a str,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    pub words: Option<Vec<Word>>,
}

/// The lines of both texts in order, each with what became of it; within a change, the
/// removed lines come before the added ones.
pub fn lines<'a>(old: &'a str, new: &'a str) -> Vec<Line<'a>> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let deadline = Instant::now() + TIME_BUDGET;
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_slices(&a, &b);
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    for op in diff.ops() {
        if op.tag() == DiffTag::Replace {
            replaced(&diff, op, deadline, &a, &b, &mut out);
            continue;
        }
        for c in diff.iter_changes(op) {
            let (old_no, new_no) = (c.old_index().map(|i| i + 1), c.new_index().map(|i| i + 1));
            let (op, text) = match c.tag() {
                ChangeTag::Equal => (Op::Equal, a[c.old_index().unwrap_or_default()]),
                ChangeTag::Delete => (Op::Delete, a[c.old_index().unwrap_or_default()]),
                ChangeTag::Insert => (Op::Insert, b[c.new_index().unwrap_or_default()]),
            };
            out.push(Line {
                op,
                text,
                old_no,
                new_no,
                words: None,
            });
        }
    }
    out
}

/// The lines of a replacing change, deleted then inserted, with their words marked where
/// the change is partial (a line that shares no word with the others has none marked).
fn replaced<'a>(
    diff: &TextDiff<'a, 'a, str>,
    op: &DiffOp,
    deadline: Instant,
    a: &[&'a str],
    b: &[&'a str],
    out: &mut Vec<Line<'a>>,
) {
    let (mut old_words, mut new_words) = (HashMap::new(), HashMap::new());
    for c in diff.iter_inline_changes_deadline(op, Some(deadline)) {
        let values = c.values();
        if !(values.iter().any(|(x, _)| *x) && values.iter().any(|(x, _)| !*x)) {
            continue;
        }
        let words = values.iter().filter(|(_, t)| !t.is_empty());
        let words = words.map(|(changed, text)| Word {
            text: text.to_string(),
            changed: *changed,
        });
        match (c.tag(), c.old_index(), c.new_index()) {
            (ChangeTag::Delete, Some(i), _) => old_words.insert(i, words.collect()),
            (ChangeTag::Insert, _, Some(i)) => new_words.insert(i, words.collect()),
            _ => None,
        };
    }
    for i in op.old_range() {
        let words = old_words.remove(&i);
        out.push(Line {
            op: Op::Delete,
            text: a[i],
            old_no: Some(i + 1),
            new_no: None,
            words,
        });
    }
    for i in op.new_range() {
        let words = new_words.remove(&i);
        out.push(Line {
            op: Op::Insert,
            text: b[i],
            old_no: None,
            new_no: Some(i + 1),
            words,
        });
    }
}

/// How many lines were removed and how many added.
pub fn counts(lines: &[Line<'_>]) -> (usize, usize) {
    let count = |op| lines.iter().filter(|l| l.op == op).count();
    (count(Op::Delete), count(Op::Insert))
}

/// A run of lines around one or more changes, as a unified diff's hunk: where it starts in
/// each text and how many lines of each it spans (a side with none starts at the line before,
/// 0 at the very start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    pub from_line: usize,
    pub from_count: usize,
    pub to_line: usize,
    pub to_count: usize,
    pub lines: Vec<Line<'a>>,
}

/// The hunks of `lines`: each change with up to `context` unchanged lines on each side,
/// changes that close merged into one hunk.
pub fn hunks<'a>(lines: &[Line<'a>], context: usize) -> Vec<Hunk<'a>> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, _) in lines.iter().enumerate().filter(|(_, l)| l.op != Op::Equal) {
        let (start, end) = (
            i.saturating_sub(context),
            (i + context + 1).min(lines.len()),
        );
        match spans.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => spans.push((start, end)),
        }
    }
    spans.into_iter().map(|(s, e)| hunk(lines, s, e)).collect()
}

fn hunk<'a>(lines: &[Line<'a>], start: usize, end: usize) -> Hunk<'a> {
    let part = &lines[start..end];
    let from_count = part.iter().filter(|l| l.op != Op::Insert).count();
    let to_count = part.iter().filter(|l| l.op != Op::Delete).count();
    // Lines of the old (new) text before the hunk: the numbers of its first line, less one.
    let before = |side: fn(&Line<'_>) -> Option<usize>| {
        lines[..start].iter().rev().find_map(side).unwrap_or(0)
    };
    let (old_before, new_before) = (before(|l| l.old_no), before(|l| l.new_no));
    Hunk {
        from_line: if from_count == 0 {
            old_before
        } else {
            old_before + 1
        },
        from_count,
        to_line: if to_count == 0 {
            new_before
        } else {
            new_before + 1
        },
        to_count,
        lines: part.to_vec(),
    }
}

/// The unified diff of `hunks` (GNU's format: a count of 1 is left out), under the headers
/// `from` and `to`.
pub fn unified(hunks: &[Hunk<'_>], from: &str, to: &str) -> String {
    use std::fmt::Write;
    let mut out = format!("--- {from}\n+++ {to}\n");
    let range = |line: usize, count: usize| match count {
        1 => line.to_string(),
        n => format!("{line},{n}"),
    };
    for h in hunks {
        let (old, new) = (
            range(h.from_line, h.from_count),
            range(h.to_line, h.to_count),
        );
        let _ = writeln!(out, "@@ -{old} +{new} @@");
        for l in &h.lines {
            let sign = match l.op {
                Op::Equal => ' ',
                Op::Delete => '-',
                Op::Insert => '+',
            };
            let _ = writeln!(out, "{sign}{}", l.text);
        }
    }
    out
}

#[cfg(test)]
mod tests;
