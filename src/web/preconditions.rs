//! Conditional requests on a document, with its version as its entity tag (RFC 9110 §8.8.3,
//! §13): `ETag: "<version>"` on every response that carries one document (`"p<version>"`
//! for its published revision), `If-None-Match` on a read (`304` when a tag matches, by the
//! weak comparison), and `If-Match` on a write (by the strong comparison: a weak tag never
//! matches), judged under the row lock by the rules (`domain::IfMatch`).

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde::Deserialize;

use super::error::{ApiError, ErrorCode};
use crate::domain::IfMatch;

/// `[http]`: how the API treats conditional requests.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    /// A write of a document (edit, submit, withdraw, archive) without `If-Match` is refused,
    /// 428 `PRECONDITION_REQUIRED`: no client can overwrite what it never read.
    #[serde(default)]
    pub require_if_match: bool,
}

/// The entity tag of a document's working copy at `version`.
pub fn etag(version: i64) -> String {
    format!("\"{version}\"")
}

/// The entity tag of a document's published revision at `version`.
pub fn published_etag(version: i64) -> String {
    format!("\"p{version}\"")
}

/// One entity tag of a list: whether it is weak, and its opaque part without the quotes.
#[derive(Debug, PartialEq, Eq)]
struct Tag<'a> {
    weak: bool,
    opaque: &'a str,
}

/// The field's value: `*`, or a list of entity tags; `None` when it is neither.
fn tags(value: &str) -> Option<Option<Vec<Tag<'_>>>> {
    let value = value.trim_matches([' ', '\t']);
    if value == "*" {
        return Some(None);
    }
    let mut found = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let weak = rest.starts_with("W/");
        let quoted = rest.strip_prefix("W/").unwrap_or(rest).strip_prefix('"')?;
        let end = quoted.find('"')?;
        let opaque = &quoted[..end];
        // etagc: '!' and '#' to '~' (and obs-text); no quote, space or control inside.
        if !opaque
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
        {
            return None;
        }
        found.push(Tag { weak, opaque });
        rest = quoted[end + 1..].trim_start_matches([' ', '\t']);
        if !rest.is_empty() && !rest.starts_with(',') {
            return None;
        }
    }
    (!found.is_empty()).then_some(Some(found))
}

/// Every field line of `name`, joined as one list (RFC 9110 §5.3); `None` when absent.
fn joined(headers: &HeaderMap, name: header::HeaderName) -> Result<Option<String>, ApiError> {
    let mut lines = headers.get_all(&name).peekable();
    if lines.peek().is_none() {
        return Ok(None);
    }
    let parts: Result<Vec<&str>, _> = lines.map(HeaderValue::to_str).collect();
    let parts = parts.map_err(|_| malformed(name.as_str()))?;
    Ok(Some(parts.join(", ")))
}

fn malformed(name: &str) -> ApiError {
    ApiError::malformed(format!(
        "{name}: give * or entity tags such as \"3\" (the document's version, in quotes)"
    ))
}

/// The `If-Match` of a write: `None` when absent (428 `PRECONDITION_REQUIRED` when
/// `required`), 400 when it is not `*` or a list of entity tags.
pub fn if_match(req: &HttpRequest, required: bool) -> Result<Option<IfMatch>, ApiError> {
    let Some(value) = joined(req.headers(), header::IF_MATCH)? else {
        return if required {
            Err(ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                ErrorCode::PreconditionRequired,
                "this service requires If-Match on a write: send the ETag of the document you read",
            ))
        } else {
            Ok(None)
        };
    };
    let Some(list) = tags(&value).ok_or_else(|| malformed("If-Match"))? else {
        return Ok(Some(IfMatch::Any));
    };
    // The strong comparison compares opaque tags as strings: `"03"` is not `"3"`.
    let versions = list
        .iter()
        .filter(|t| !t.weak)
        .filter_map(|t| {
            t.opaque
                .parse::<i64>()
                .ok()
                .filter(|v| v.to_string() == t.opaque)
        })
        .collect();
    Ok(Some(IfMatch::Versions(versions)))
}

/// The `Lease-Token` of an edit: the token of the edit lease it holds (`None`: it holds
/// none); 400 when it is not printable ASCII.
pub fn lease_token(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get("lease-token") else {
        return Ok(None);
    };
    let token = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_graphic()));
    token.map(|t| Some(t.to_string())).ok_or_else(|| {
        ApiError::malformed("Lease-Token: give the token POST /documents/{id}/lease answered")
    })
}

/// Whether the request's `If-None-Match` matches `etag` (weak comparison; `*` matches any
/// current representation). A malformed field is ignored, as if absent.
fn none_match(req: &HttpRequest, etag: &str) -> bool {
    let Ok(Some(value)) = joined(req.headers(), header::IF_NONE_MATCH) else {
        return false;
    };
    let opaque = etag.trim_matches('"');
    match tags(&value) {
        Some(None) => true,
        Some(Some(list)) => list.iter().any(|t| t.opaque == opaque),
        None => false,
    }
}

/// The 200 of a read carrying `etag`, or its 304 when the request's `If-None-Match` matches.
pub fn read_response<V: serde::Serialize>(
    req: &HttpRequest,
    etag: String,
    view: &V,
) -> HttpResponse {
    if none_match(req, &etag) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish();
    }
    HttpResponse::Ok()
        .insert_header((header::ETAG, etag))
        .json(view)
}

/// `res` with the `ETag` of a document's working copy at `version`.
pub fn tagged(mut res: HttpResponse, version: i64) -> HttpResponse {
    if let Ok(v) = HeaderValue::from_str(&etag(version)) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

#[cfg(test)]
mod tests;
