//! A search of a space's document titles (`GET /documents?space=&q=`): a case-insensitive
//! substring match, as `LIKE` reads it once `%`, `_` and `\` in the query are escaped.
//!
//! The trigram index (`pg_trgm`) serves a query that holds a trigram: a run of at least
//! three letters or digits (pg_trgm keeps words of letters and digits only). A query without
//! one (shorter than three characters, or punctuation alone) would make the index read every
//! entry it holds; it is answered instead by reading the space's documents newest first,
//! which stops as soon as the page is full.

use super::inputs::InputError;

/// A title search, 1 to 200 characters (as sent, nothing trimmed), no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleQuery(String);

impl TitleQuery {
    pub const MAX_CHARS: usize = 200;
    /// The letters or digits in a row a query needs for the trigram index to serve it.
    pub const TRIGRAM: usize = 3;

    pub fn parse(s: &str) -> Result<Self, InputError> {
        let n = s.chars().count();
        if !(1..=Self::MAX_CHARS).contains(&n) {
            return Err(InputError {
                field: "q",
                problem: format!("must be 1 to {} characters", Self::MAX_CHARS),
            });
        }
        if s.chars().any(char::is_control) {
            return Err(InputError {
                field: "q",
                problem: "contains control characters".into(),
            });
        }
        Ok(Self(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `LIKE` pattern of titles that contain the query: `%`, `_` and `\` escaped with
    /// `\` (PostgreSQL's escape character for `LIKE`), wrapped in `%`.
    pub fn like_pattern(&self) -> String {
        let mut pattern = String::with_capacity(self.0.len() + 2);
        pattern.push('%');
        for c in self.0.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        pattern
    }

    /// The query holds a trigram: [`Self::TRIGRAM`] letters or digits in a row.
    pub fn has_trigram(&self) -> bool {
        let mut run = 0;
        for c in self.0.chars() {
            run = if c.is_alphanumeric() { run + 1 } else { 0 };
            if run >= Self::TRIGRAM {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bounds_and_control_characters() {
        assert!(TitleQuery::parse("").is_err());
        assert!(TitleQuery::parse(&"x".repeat(201)).is_err());
        assert!(
            TitleQuery::parse(&"é".repeat(200)).is_ok(),
            "characters, not bytes"
        );
        assert!(TitleQuery::parse("a\nb").is_err());
        assert_eq!(TitleQuery::parse(" q3 ").unwrap().as_str(), " q3 ");
    }

    #[test]
    fn wildcards_and_the_escape_character_are_escaped() {
        let p = |s: &str| TitleQuery::parse(s).unwrap().like_pattern();
        assert_eq!(p("report"), "%report%");
        assert_eq!(p("100%"), "%100\\%%");
        assert_eq!(p("a_b"), "%a\\_b%");
        assert_eq!(p("c:\\dir"), "%c:\\\\dir%");
        assert_eq!(p("%_\\"), "%\\%\\_\\\\%");
    }

    #[test]
    fn trigrams_need_three_letters_or_digits_in_a_row() {
        let t = |s: &str| TitleQuery::parse(s).unwrap().has_trigram();
        for yes in ["abc", "Q3 plan", "a-bcd", "été", "2026"] {
            assert!(t(yes), "{yes}");
        }
        for no in ["a", "hr", "a-b-c", "%%%", "...", "q3 4"] {
            assert!(!t(no), "{no}");
        }
    }

    proptest! {
        #[test]
        fn a_pattern_unescapes_to_the_query(s in "\\PC{1,200}") {
            let q = TitleQuery::parse(&s).unwrap();
            let pattern = q.like_pattern();
            let inner = &pattern[1..pattern.len() - 1];
            let (mut out, mut escaped) = (String::new(), false);
            for c in inner.chars() {
                if escaped {
                    out.push(c);
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else {
                    prop_assert!(c != '%' && c != '_', "an unescaped wildcard in {}", pattern);
                    out.push(c);
                }
            }
            prop_assert!(!escaped);
            prop_assert_eq!(out, s);
        }
    }
}
