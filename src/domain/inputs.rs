//! Parsed inputs: a value of one of these types has been checked (parse, don't validate).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct InputError {
    pub field: &'static str,
    pub problem: String,
}

fn err(field: &'static str, problem: impl Into<String>) -> InputError {
    InputError {
        field,
        problem: problem.into(),
    }
}

/// Rejects control characters other than newline, carriage return and tab.
fn has_forbidden_control(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

macro_rules! text_type {
    ($name:ident, $field:literal, $min:expr, $max:expr, single_line = $single:expr) => {
        #[derive(Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            pub const MAX_CHARS: usize = $max;

            #[allow(unused_comparisons)]
            /// At most `MAX_CHARS` characters (Unicode code points, as JSON Schema's
            /// `maxLength` counts them) as sent, white space around included; then trimmed,
            /// at least the minimum.
            pub fn parse(s: &str) -> Result<Self, InputError> {
                if s.chars().count() > $max {
                    return Err(err($field, format!("must be at most {} characters", $max)));
                }
                let trimmed = s.trim();
                let n = trimmed.chars().count();
                if n < $min {
                    return Err(if $min == 1 {
                        err($field, "must not be empty")
                    } else {
                        err($field, format!("must be at least {} characters", $min))
                    });
                }
                if has_forbidden_control(trimmed) || ($single && trimmed.contains(['\n', '\r'])) {
                    return Err(err($field, "contains forbidden control characters"));
                }
                Ok(Self(trimmed.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({} chars)", stringify!($name), self.0.chars().count())
            }
        }
    };
}

text_type!(DocumentTitle, "title", 1, 200, single_line = true);
text_type!(DocumentBody, "body", 1, 200_000, single_line = false);
text_type!(RejectReason, "reason", 1, 2000, single_line = false);
text_type!(Comment, "comment", 0, 2000, single_line = false);
text_type!(CommentBody, "body", 1, 10_000, single_line = false);
text_type!(ArchiveReason, "reason", 1, 2000, single_line = false);

/// The `sub` of an authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserId(String);

impl UserId {
    pub fn parse(s: &str) -> Result<Self, InputError> {
        if s.is_empty() || s.len() > 128 {
            return Err(err("sub", "must be 1 to 128 bytes"));
        }
        if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(err(
                "sub",
                "must not contain whitespace or control characters",
            ));
        }
        Ok(Self(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn titles() {
        assert!(DocumentTitle::parse("").is_err());
        assert!(DocumentTitle::parse("   ").is_err());
        assert!(DocumentTitle::parse("a\nb").is_err());
        assert!(DocumentTitle::parse(&"x".repeat(201)).is_err());
        assert_eq!(DocumentTitle::parse("  Hello ").unwrap().as_str(), "Hello");
        // The length as sent, as the schema's maxLength counts it (the fuzzer found a title
        // of 200 characters and a space accepted against maxLength 200).
        assert!(DocumentTitle::parse(&format!("{} ", "x".repeat(200))).is_err());
        let astral = "\u{1F600}".repeat(200);
        assert!(
            DocumentTitle::parse(&astral).is_ok(),
            "characters, not bytes"
        );
        assert!(
            DocumentTitle::parse("{\"$gt\": \"\"}").is_ok(),
            "injection text is just text"
        );
    }

    #[test]
    fn comments_may_be_empty_reasons_may_not() {
        assert!(Comment::parse("").is_ok());
        assert!(RejectReason::parse(" ").is_err());
        assert!(RejectReason::parse("bad\u{0}").is_err());
    }

    #[test]
    fn user_ids() {
        assert!(UserId::parse("alice").is_ok());
        assert!(UserId::parse("").is_err());
        assert!(UserId::parse("a b").is_err());
        assert!(UserId::parse(&"a".repeat(129)).is_err());
    }

    proptest! {
        #[test]
        fn parsed_titles_hold_their_invariants(s in "\\PC{0,300}") {
            if let Ok(t) = DocumentTitle::parse(&s) {
                let n = t.as_str().chars().count();
                prop_assert!((1..=200).contains(&n));
                prop_assert_eq!(t.as_str(), t.as_str().trim());
                prop_assert!(!t.as_str().contains('\n'));
            }
        }

        #[test]
        fn reasons_never_panic_and_bound_length(s in ".{0,2100}") {
            if let Ok(r) = RejectReason::parse(&s) {
                prop_assert!(r.as_str().chars().count() <= 2000);
            }
        }
    }
}
