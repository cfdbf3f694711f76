//! Reads a request body with a size limit and a deadline, and maps every failure to the
//! error envelope (actix's own extractors answer some of these in plain text). Handlers
//! check the token and the role first, so no body is read for a caller who may not send it.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::{ApiError, ErrorCode};

/// How a request body is read: at most `max_bytes` (`server.json_limit_bytes`), all of it
/// within `timeout` of the handler starting to read (`server.body_timeout_ms`).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub max_bytes: usize,
    pub timeout: Duration,
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::ValidationFailed,
        format!("the request body is larger than {limit} bytes"),
    )
}

/// The content type's media type, lower case; None without a `Content-Type`.
fn media_type(req: &HttpRequest) -> Option<String> {
    let ct = req.headers().get(header::CONTENT_TYPE)?;
    let ct = ct.to_str().unwrap_or("");
    Some(
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

/// Reads a JSON body after checking its content type (none is read as JSON).
pub async fn read_body(
    req: &HttpRequest,
    payload: web::Payload,
    limits: BodyLimits,
) -> Result<Vec<u8>, ApiError> {
    if media_type(req).is_some_and(|m| m != "application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::ValidationFailed,
            "the request body must be application/json",
        ));
    }
    read_within(req, payload, limits).await
}

/// Reads a console form (`application/x-www-form-urlencoded`, or no content type) under the
/// same limits as a JSON body, and parses it as `T`; with the bytes read (what an
/// `Idempotency-Key`'s fingerprint counts).
pub async fn read_form<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    limits: BodyLimits,
) -> Result<(T, Vec<u8>), ApiError> {
    if media_type(req).is_some_and(|m| m != "application/x-www-form-urlencoded") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::ValidationFailed,
            "the form must be application/x-www-form-urlencoded",
        ));
    }
    let bytes = read_within(req, payload, limits).await?;
    let form = serde_urlencoded::from_bytes(&bytes)
        .map_err(|_| ApiError::validation("the form could not be read"))?;
    Ok((form, bytes))
}

/// Reads the whole body: at most `limits.max_bytes`, within `limits.timeout`.
async fn read_within(
    req: &HttpRequest,
    mut payload: web::Payload,
    limits: BodyLimits,
) -> Result<Vec<u8>, ApiError> {
    let limit = limits.max_bytes;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    let read = async {
        let mut body = Vec::with_capacity(declared.unwrap_or(0).min(limit));
        while let Some(chunk) = payload.next().await {
            let chunk =
                chunk.map_err(|_| ApiError::malformed("the request body could not be read"))?;
            if body.len() + chunk.len() > limit {
                return Err(too_large(limit));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(limits.timeout, read)
        .await
        .unwrap_or_else(|_| Err(ApiError::body_timeout(limits.timeout)))
}

/// Parses `body` as `T`. When `empty_ok` (an optional body, described as nullable), an empty
/// body and a JSON `null` are both read as `{}`.
pub fn parse_json<T: DeserializeOwned>(body: &[u8], empty_ok: bool) -> Result<T, ApiError> {
    if empty_ok && body.trim_ascii() == b"null" {
        return parse_json(b"{}", false);
    }
    let body: &[u8] = if body.iter().all(|b| b.is_ascii_whitespace()) {
        if empty_ok {
            b"{}"
        } else {
            return Err(ApiError::malformed("a JSON request body is required"));
        }
    } else {
        body
    };
    let clip = |e: serde_json::Error| -> String { e.to_string().chars().take(200).collect() };
    // Syntax first (400); a truncated array would otherwise fail as data at its first element.
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        let msg = clip(e);
        return Err(ApiError::malformed(format!(
            "the request body is not valid JSON: {msg}"
        )));
    }
    // serde reads a struct from an array as well ([title, body]); every body here is an object.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(ApiError::validation(
            "the request body must be a JSON object",
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        let msg = clip(e);
        ApiError::validation(format!(
            "the request body does not match the expected fields: {msg}"
        ))
    })
}

/// The largest whole number a JSON float holds exactly (2^53 - 1): past it, `…0.0` may stand
/// for a neighbour. A field that takes such floats documents it as its maximum.
pub const MAX_EXACT_FLOAT: i64 = (1 << 53) - 1;

/// A JSON number as JSON Schema's `integer` counts one: `41719` and `41719.0` alike; `None`
/// for a fraction or a float past [`MAX_EXACT_FLOAT`].
pub fn whole(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= MAX_EXACT_FLOAT as f64)
            .map(|f| f as i64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Optional {
        #[allow(dead_code)]
        comment: Option<String>,
    }

    /// The fuzzer sent approve a `null` body, which its nullable optional body allows.
    #[test]
    fn an_optional_body_may_be_empty_or_null_a_required_one_may_not() {
        for body in [&b""[..], b"  ", b"null", b" null\n", b"{}"] {
            assert!(parse_json::<Optional>(body, true).is_ok(), "{body:?}");
        }
        for body in [&b""[..], b"null"] {
            let e = parse_json::<Optional>(body, false).unwrap_err();
            assert_eq!(e.code, ErrorCode::ValidationFailed);
        }
        assert!(parse_json::<Optional>(b"nul", true).is_err());
    }

    /// serde reads a struct from a JSON array too: `["x"]` was taken as `{"comment": "x"}`.
    #[test]
    fn a_whole_float_counts_up_to_the_largest_exact_one() {
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).unwrap();
        assert_eq!(whole(&n("1117739510849014.0")), Some(1_117_739_510_849_014));
        assert_eq!(whole(&n("9007199254740991.0")), Some(MAX_EXACT_FLOAT));
        assert_eq!(whole(&n("9007199254740993")), Some(9_007_199_254_740_993));
        assert_eq!(whole(&n("9007199254740992.0")), None);
        assert_eq!(whole(&n("2.5")), None);
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused() {
        for body in [&b"[null]"[..], b" [\"x\"]", b"\"x\"", b"1", b"true"] {
            let e = parse_json::<Optional>(body, true).unwrap_err();
            assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{body:?}");
        }
        let e = parse_json::<Optional>(b"[1,", true).unwrap_err();
        assert_eq!(
            e.status,
            StatusCode::BAD_REQUEST,
            "malformed JSON stays a 400"
        );
        assert!(parse_json::<Optional>(b" {\"comment\": \"ok\"}", true).is_ok());
    }
}
