use actix_web::test::TestRequest;

use super::*;

fn if_match_of(lines: &[&str], required: bool) -> Result<Option<IfMatch>, ApiError> {
    let mut req = TestRequest::default();
    for line in lines {
        req = req.append_header((header::IF_MATCH, *line));
    }
    if_match(&req.to_http_request(), required)
}

fn versions(v: &[i64]) -> Option<IfMatch> {
    Some(IfMatch::Versions(v.to_vec()))
}

#[test]
fn if_match_reads_star_lists_and_several_lines() {
    assert_eq!(if_match_of(&[], false).unwrap(), None);
    assert_eq!(if_match_of(&["*"], false).unwrap(), Some(IfMatch::Any));
    assert_eq!(if_match_of(&["\"3\""], false).unwrap(), versions(&[3]));
    assert_eq!(
        if_match_of(&[" \"3\" ,\"7\""], false).unwrap(),
        versions(&[3, 7])
    );
    assert_eq!(
        if_match_of(&["\"3\"", "\"9\""], false).unwrap(),
        versions(&[3, 9])
    );
}

#[test]
fn if_match_compares_strongly() {
    // A weak tag never matches in If-Match; nor does a tag that is not a version as this
    // service writes it (the published revision's, a leading zero or sign, an opaque one).
    for tag in ["W/\"3\"", "\"p3\"", "\"03\"", "\"+3\"", "\"abc\"", "\"\""] {
        assert_eq!(if_match_of(&[tag], false).unwrap(), versions(&[]), "{tag}");
    }
    assert_eq!(
        if_match_of(&["W/\"3\", \"4\""], false).unwrap(),
        versions(&[4])
    );
}

#[test]
fn a_malformed_if_match_is_400_and_a_missing_one_428_when_required() {
    for bad in ["3", "\"3", "\"3\" \"4\"", "W/3", "**", "\"a b\""] {
        let e = if_match_of(&[bad], false).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, ErrorCode::ValidationFailed),
            "{bad}"
        );
    }
    let e = if_match_of(&[], true).unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.code),
        (428, ErrorCode::PreconditionRequired)
    );
    assert_eq!(if_match_of(&["\"2\""], true).unwrap(), versions(&[2]));
}

fn read(lines: &[&str], etag: &str) -> u16 {
    let mut req = TestRequest::default();
    for line in lines {
        req = req.append_header((header::IF_NONE_MATCH, *line));
    }
    let res = read_response(
        &req.to_http_request(),
        etag.to_string(),
        &serde_json::json!({}),
    );
    assert_eq!(res.headers().get(header::ETAG).unwrap(), etag);
    res.status().as_u16()
}

#[test]
fn if_none_match_compares_weakly() {
    assert_eq!(read(&[], "\"3\""), 200);
    assert_eq!(read(&["\"3\""], "\"3\""), 304);
    assert_eq!(read(&["W/\"3\""], "\"3\""), 304);
    assert_eq!(read(&["\"1\", \"3\""], "\"3\""), 304);
    assert_eq!(read(&["*"], "\"3\""), 304);
    assert_eq!(read(&["\"2\""], "\"3\""), 200);
    assert_eq!(read(&["\"3\""], "\"p3\""), 200);
    assert_eq!(read(&["\"p3\""], "\"p3\""), 304);
    // Malformed: ignored, as if absent.
    assert_eq!(read(&["3"], "\"3\""), 200);
}
