//! What the published schemas say of the text fields of request bodies (`domain::inputs` has
//! the rules): lengths, and a pattern that refuses control characters other than tab (and
//! line breaks where several lines are allowed) and, where the field may not be empty, asks
//! for a character that is not white space (the service trims). Lengths are Unicode code
//! points (characters, not bytes or UTF-16 units), counted as sent by both: `maxLength`
//! here, `domain::inputs` there. Used with `#[schema(schema_with = ...)]`.

use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, SchemaType, Type};

use crate::domain::{
    ArchiveReason, Comment, CommentBody, DocumentBody, DocumentTitle, RejectReason, SpaceName,
};

const LINE: &str = r"^[^\u0000-\u0008\u000A-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u0008\u000A-\u001F\u007F-\u009F]*$";
const TEXT: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";
/// One line, no control characters at all, not blank (names of stages, groups).
const NAME: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";
const OPTIONAL_TEXT: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";

fn text(min: usize, max: usize, pattern: &str, nullable: bool, description: &str) -> Object {
    let ty = if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::Type(Type::String)
    };
    ObjectBuilder::new()
        .schema_type(ty)
        .min_length((min > 0).then_some(min))
        .max_length(Some(max))
        .pattern(Some(pattern))
        .description(Some(description))
        .build()
}

pub fn title() -> Object {
    let doc = "One line, at most 200 characters (1 once trimmed), no control characters but tab";
    text(1, DocumentTitle::MAX_CHARS, LINE, false, doc)
}

pub fn body() -> Object {
    let doc = "At most 200,000 characters (1 once trimmed), no control characters but tab and line breaks";
    text(1, DocumentBody::MAX_CHARS, TEXT, false, doc)
}

pub fn reason() -> Object {
    let doc =
        "At most 2,000 characters (1 once trimmed), no control characters but tab and line breaks";
    text(1, RejectReason::MAX_CHARS, TEXT, false, doc)
}

pub fn comment() -> Object {
    let doc = "At most 2,000 characters, no control characters but tab and line breaks";
    text(0, Comment::MAX_CHARS, OPTIONAL_TEXT, true, doc)
}

pub fn archive_reason() -> Object {
    let doc = "Why it is archived: at most 2,000 characters (1 once trimmed), no control characters but tab and line breaks";
    text(1, ArchiveReason::MAX_CHARS, TEXT, true, doc)
}

pub fn comment_body() -> Object {
    let doc =
        "At most 10,000 characters (1 once trimmed), no control characters but tab and line breaks";
    text(1, CommentBody::MAX_CHARS, TEXT, false, doc)
}

pub fn stage_name() -> Object {
    let doc = "A stage's name: 1 to 64 characters, not blank, no control characters; unique in its policy";
    text(1, 64, NAME, false, doc)
}

pub fn space_name() -> Object {
    let doc = "A space's name: 1 to 200 characters, not blank, no control characters";
    text(1, SpaceName::MAX_CHARS, NAME, false, doc)
}

pub fn groups() -> Array {
    let group = text(
        1,
        256,
        NAME,
        false,
        "A group as the JWT `groups` claim names it",
    );
    ArrayBuilder::new()
        .items(group)
        .max_items(Some(crate::domain::policy::MAX_GROUPS))
        .description(Some(
            "Who may vote in this stage (JWT `groups`); empty or left out: any reviewer",
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether the schema admits `s` (lengths in characters, as JSON Schema counts them). The
    /// regex crate reads `\s` as Unicode White_Space, as `str::trim` does; ECMA-262 adds
    /// U+FEFF, so the published pattern is if anything stricter there.
    fn admits(schema: &Object, s: &str) -> bool {
        let n = s.chars().count();
        let pattern = regex::Regex::new(schema.pattern.as_deref().unwrap()).unwrap();
        schema.min_length.is_none_or(|m| n >= m)
            && schema.max_length.is_none_or(|m| n <= m)
            && pattern.is_match(s)
    }

    fn check(s: &str) -> Result<(), TestCaseError> {
        let cases: [(Object, bool); 5] = [
            (title(), DocumentTitle::parse(s).is_ok()),
            (body(), DocumentBody::parse(s).is_ok()),
            (reason(), RejectReason::parse(s).is_ok()),
            (comment(), Comment::parse(s).is_ok()),
            (space_name(), SpaceName::parse(s).is_ok()),
        ];
        for (schema, accepted) in cases {
            if admits(&schema, s) {
                prop_assert!(accepted, "{:?} admits {s:?}", schema.description);
            }
        }
        Ok(())
    }

    #[test]
    fn edge_cases_the_schemas_admit_are_accepted() {
        for s in [
            "x", " x ", "\tx", "a\nb", "\u{b}x", "x\u{85}", "\u{feff}", "", " ",
        ] {
            check(s).unwrap();
        }
        assert!(!admits(&title(), " "), "blank");
        assert!(!admits(&title(), "a\nb"), "two lines");
        assert!(!admits(&body(), "a\u{0}b"), "NUL");
        assert!(admits(&body(), "a\nb\tc"));
        assert!(admits(&comment(), ""));
        // A name's pattern refuses a control character anywhere, trimmed or not: so do they.
        for s in ["\u{85}Ops", "\tOps", "Ops\u{9f}"] {
            assert!(!admits(&space_name(), s), "{s:?}");
            assert!(SpaceName::parse(s).is_err(), "{s:?}");
        }
    }

    proptest! {
        /// Text the published schemas admit is text the service accepts.
        #[test]
        fn what_the_schemas_admit_the_service_accepts(s in "(\\PC|\\p{Cc}|\\s){0,250}") {
            check(&s)?;
        }
    }
}
