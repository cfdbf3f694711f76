//! The side-by-side view of a line diff (`domain::diff`, the one `GET /documents/{id}/diff`
//! serves): the lines both texts keep beside each other, and each change's removed and
//! added lines paired row by row. The lines are the texts' own slices and their marked
//! words: nothing here makes HTML, the template escapes them.

use crate::domain::diff::{Line, Op, Word};

/// A line of one side: its number on that side (from 1), its text, and its words marked
/// when a change replaced part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell<'a> {
    pub no: usize,
    pub text: &'a str,
    pub words: Option<&'a [Word]>,
}

/// One row of the side-by-side view: a line of the old text (left) and of the new (right);
/// the side with fewer lines in a change is empty below them.
#[derive(Debug, PartialEq, Eq)]
pub struct Row<'a> {
    pub old: Option<Cell<'a>>,
    pub new: Option<Cell<'a>>,
    pub changed: bool,
}

fn cell<'a>(no: Option<usize>, l: &'a Line<'a>) -> Cell<'a> {
    Cell {
        no: no.unwrap_or_default(),
        text: l.text,
        words: l.words.as_deref(),
    }
}

/// The rows of `lines` side by side.
pub fn side_by_side<'a>(lines: &'a [Line<'a>]) -> Vec<Row<'a>> {
    let mut rows = Vec::with_capacity(lines.len());
    let (mut removed, mut added): (Vec<Cell<'a>>, Vec<Cell<'a>>) = (Vec::new(), Vec::new());
    for l in lines {
        match l.op {
            Op::Delete => removed.push(cell(l.old_no, l)),
            Op::Insert => added.push(cell(l.new_no, l)),
            Op::Equal => {
                pair(&mut removed, &mut added, &mut rows);
                rows.push(Row {
                    old: Some(cell(l.old_no, l)),
                    new: Some(cell(l.new_no, l)),
                    changed: false,
                });
            }
        }
    }
    pair(&mut removed, &mut added, &mut rows);
    rows
}

/// The rows of one change, its removed and added lines paired; both emptied.
fn pair<'a>(removed: &mut Vec<Cell<'a>>, added: &mut Vec<Cell<'a>>, rows: &mut Vec<Row<'a>>) {
    for k in 0..removed.len().max(added.len()) {
        rows.push(Row {
            old: removed.get(k).copied(),
            new: added.get(k).copied(),
            changed: true,
        });
    }
    removed.clear();
    added.clear();
}

#[cfg(test)]
mod tests;
