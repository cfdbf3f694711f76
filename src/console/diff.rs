//! A line diff of two texts (the published and the working copy of a document), for the
//! console to show side by side: the lines both keep, and the ones removed and added.
//!
//! The lines both texts start and end with are matched first; what lies between is matched
//! by a longest common subsequence, whose table has one cell per pair of lines. A middle
//! too large for [`MAX_CELLS`] is not matched line by line: it reads as removed and added
//! whole, and the diff says so ([`Diff::exact`] is false). The lines are the texts' own
//! slices: nothing here makes HTML, the template escapes them.

/// The most cells the table of a longest common subsequence may have (4 bytes each).
pub const MAX_CELLS: usize = 1_000_000;

/// What became of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// In both texts.
    Same,
    /// In the old text only.
    Removed,
    /// In the new text only.
    Added,
}

/// The lines of both texts in order, each with what became of it.
#[derive(Debug, PartialEq, Eq)]
pub struct Diff<'a> {
    pub lines: Vec<(Change, &'a str)>,
    /// False when the changed middle was too large to match line by line.
    pub exact: bool,
}

impl Diff<'_> {
    /// How many lines were removed and how many added.
    pub fn counts(&self) -> (usize, usize) {
        let count = |c| self.lines.iter().filter(|(k, _)| *k == c).count();
        (count(Change::Removed), count(Change::Added))
    }
}

/// The line diff of `old` and `new` (lines as [`str::lines`] cuts them).
pub fn lines<'a>(old: &'a str, new: &'a str) -> Diff<'a> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<(Change, &str)> = a[..head].iter().map(|l| (Change::Same, *l)).collect();
    let cells = (mid_a.len() + 1).saturating_mul(mid_b.len() + 1);
    let exact = cells <= MAX_CELLS;
    if exact {
        out.extend(matched(mid_a, mid_b));
    } else {
        out.extend(mid_a.iter().map(|l| (Change::Removed, *l)));
        out.extend(mid_b.iter().map(|l| (Change::Added, *l)));
    }
    out.extend(a[a.len() - tail..].iter().map(|l| (Change::Same, *l)));
    Diff { lines: out, exact }
}

/// `a` and `b` matched by a longest common subsequence; within a change, removed lines come
/// before added ones.
fn matched<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(Change, &'a str)> {
    let (n, m) = (a.len(), b.len());
    let width = m + 1;
    // table[i * width + j]: the length of a longest common subsequence of a[i..] and b[j..].
    let mut table = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i * width + j] = if a[i] == b[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let mut out = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push((Change::Same, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == m || (i < n && table[(i + 1) * width + j] >= table[i * width + j + 1]) {
            out.push((Change::Removed, a[i]));
            i += 1;
        } else {
            out.push((Change::Added, b[j]));
            j += 1;
        }
    }
    out
}

/// One row of the side-by-side view: a line of the old text (left) and of the new (right),
/// with its line number; a change pairs its removed and added lines row by row, and the
/// side with fewer lines is empty below them.
#[derive(Debug, PartialEq, Eq)]
pub struct Row<'a> {
    pub old: Option<(usize, &'a str)>,
    pub new: Option<(usize, &'a str)>,
    pub changed: bool,
}

/// The rows of `diff` side by side.
pub fn side_by_side<'a>(diff: &Diff<'a>) -> Vec<Row<'a>> {
    let mut rows = Vec::with_capacity(diff.lines.len());
    let mut at = (0, 0);
    let (mut removed, mut added): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for &(change, line) in &diff.lines {
        match change {
            Change::Removed => removed.push(line),
            Change::Added => added.push(line),
            Change::Same => {
                pair(&mut removed, &mut added, &mut at, &mut rows);
                at = (at.0 + 1, at.1 + 1);
                rows.push(Row {
                    old: Some((at.0, line)),
                    new: Some((at.1, line)),
                    changed: false,
                });
            }
        }
    }
    pair(&mut removed, &mut added, &mut at, &mut rows);
    rows
}

/// The rows of one change: its removed and added lines paired, numbered on from `at` (the
/// last line numbers of the old and the new text so far), and `removed` and `added` emptied.
fn pair<'a>(
    removed: &mut Vec<&'a str>,
    added: &mut Vec<&'a str>,
    at: &mut (usize, usize),
    rows: &mut Vec<Row<'a>>,
) {
    for k in 0..removed.len().max(added.len()) {
        let old = removed.get(k).map(|l| {
            at.0 += 1;
            (at.0, *l)
        });
        let new = added.get(k).map(|l| {
            at.1 += 1;
            (at.1, *l)
        });
        rows.push(Row {
            old,
            new,
            changed: true,
        });
    }
    removed.clear();
    added.clear();
}

#[cfg(test)]
mod tests;
