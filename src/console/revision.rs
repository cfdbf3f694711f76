//! A revision in progress as the document page shows it: the published copy and the
//! working copy side by side, with the lines that changed between them (and the title, if
//! it changed) marked.

use super::diff;
use crate::domain::diff::{self as lines, Word};

/// One copy of a document: its version, title and body.
pub struct Copy<'a> {
    pub version: i64,
    pub title: &'a str,
    pub body: &'a str,
}

/// A line of one side, numbered from 1 on its side; a line a change replaced part of has
/// its words, `changed` where they differ.
pub struct Cell {
    pub no: usize,
    pub text: String,
    pub words: Option<Vec<Word>>,
}

/// A row: a line of the published copy beside one of the working copy; either may be
/// missing where a change removed or added more lines on one side than on the other.
pub struct RevisionRow {
    pub old: Option<Cell>,
    pub new: Option<Cell>,
    pub changed: bool,
}

/// The side-by-side view of a revision.
pub struct RevisionPanel {
    pub published_version: i64,
    pub working_version: i64,
    pub published_title: String,
    pub working_title: String,
    pub title_changed: bool,
    pub rows: Vec<RevisionRow>,
    /// "1 line removed and 2 added, and the title changed."
    pub summary: String,
}

impl RevisionPanel {
    /// `published` beside `working`.
    pub fn of(published: Copy<'_>, working: Copy<'_>) -> Self {
        let d = lines::lines(published.body, working.body);
        let title_changed = published.title != working.title;
        let summary = summary(lines::counts(&d), title_changed);
        let cell = |c: Option<diff::Cell<'_>>| {
            c.map(|c| Cell {
                no: c.no,
                text: c.text.to_string(),
                words: c.words.map(<[Word]>::to_vec),
            })
        };
        let rows = diff::side_by_side(&d)
            .into_iter()
            .map(|r| RevisionRow {
                old: cell(r.old),
                new: cell(r.new),
                changed: r.changed,
            })
            .collect();
        RevisionPanel {
            published_version: published.version,
            working_version: working.version,
            published_title: published.title.to_string(),
            working_title: working.title.to_string(),
            title_changed,
            rows,
            summary,
        }
    }
}

/// What changed, in a sentence: "2 lines removed and 1 added; the title changed."
fn summary((removed, added): (usize, usize), title_changed: bool) -> String {
    let lines = |n: usize| match n {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    let body = match (removed, added) {
        (0, 0) => "The body is unchanged".to_string(),
        (r, 0) => format!("{} removed", lines(r)),
        (0, a) => format!("{} added", lines(a)),
        (r, a) => format!("{} removed and {a} added", lines(r)),
    };
    match title_changed {
        true => format!("{body}; the title changed."),
        false => format!("{body}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy<'a>(version: i64, title: &'a str, body: &'a str) -> Copy<'a> {
        Copy {
            version,
            title,
            body,
        }
    }

    #[test]
    fn the_summary_names_what_changed() {
        assert_eq!(summary((0, 0), false), "The body is unchanged.");
        assert_eq!(
            summary((0, 0), true),
            "The body is unchanged; the title changed."
        );
        assert_eq!(summary((1, 0), false), "1 line removed.");
        assert_eq!(summary((0, 3), false), "3 lines added.");
        assert_eq!(
            summary((1, 2), true),
            "1 line removed and 2 added; the title changed."
        );
    }

    #[test]
    fn a_panel_marks_the_changed_lines_and_keeps_the_text_as_written() {
        let p = RevisionPanel::of(
            copy(3, "Guide", "Intro\nStep <one>\nEnd"),
            copy(4, "Guide v2", "Intro\nStep <b>two</b>\nEnd"),
        );
        assert_eq!((p.published_version, p.working_version), (3, 4));
        assert!(p.title_changed);
        assert_eq!(p.summary, "1 line removed and 1 added; the title changed.");
        fn text(c: &Option<Cell>) -> &str {
            c.as_ref().map_or("", |c| c.text.as_str())
        }
        let changed: Vec<(&str, &str)> = p
            .rows
            .iter()
            .filter(|r| r.changed)
            .map(|r| (text(&r.old), text(&r.new)))
            .collect();
        // The markup is text here: the template escapes it.
        assert_eq!(changed, [("Step <one>", "Step <b>two</b>")]);
        assert_eq!(p.rows.len(), 3);
    }
}
