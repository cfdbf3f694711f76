//! How the console answers: HTML with its security headers, and errors as a plain message
//! for people (the same status as the JSON API gives, with `Retry-After` kept).

use std::fmt;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

use crate::web::body::read_form;
use crate::web::csp::CONSOLE_CONTENT_SECURITY_POLICY;
use crate::web::error::{ApiError, ErrorCode};
use crate::web::state::AppState;

/// An HTML answer: never cached (fragments carry what the token may see), never framed.
pub fn html(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            CONSOLE_CONTENT_SECURITY_POLICY,
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(body)
}

/// A rendered template with status 200.
pub fn rendered(t: &impl Template) -> Result<HttpResponse, Shown> {
    let body = t
        .render()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("template: {e}")))?;
    Ok(html(StatusCode::OK, body))
}

/// A refusal or failure as the console shows it: an alert in place of the fragment, or,
/// for an action, in the action's outcome area (`HX-Retarget`).
pub struct Shown {
    pub error: ApiError,
    /// A message that says more than the API's (who decided a review already).
    pub message: Option<String>,
    /// Where an action's error is shown (`HX-Retarget`: the page's outcome area, or an
    /// area beside the form) rather than in place of the fragment; the form stays as it was.
    pub outcome: Option<&'static str>,
}

impl From<ApiError> for Shown {
    fn from(error: ApiError) -> Self {
        Shown {
            error,
            message: None,
            outcome: None,
        }
    }
}

impl Shown {
    /// The error of an action: shown above the form, which stays.
    pub fn action(error: ApiError) -> Self {
        Self::beside(error, "#outcome")
    }

    /// The error of an action, shown in the area `target` (a CSS selector) beside its form.
    pub fn beside(error: ApiError, target: &'static str) -> Self {
        Shown {
            outcome: Some(target),
            ..Shown::from(error)
        }
    }
}

/// The form of an action, read under the API's body limits (size and deadline; the same
/// 413 and 408) once the caller's token and role are checked; a form it cannot parse is the
/// 422 the API gives a body it cannot read.
pub async fn form<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<T, Shown> {
    Ok(sent_form(req, payload, state).await?.0)
}

/// [`form`], with the bytes the form came in: what an `Idempotency-Key`'s fingerprint
/// counts, as a JSON body's bytes do for the API.
pub async fn sent_form<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<(T, Vec<u8>), Shown> {
    read_form(req, payload, state.body)
        .await
        .map_err(Shown::action)
}

impl fmt::Debug for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

#[derive(Template)]
#[template(path = "console/alert.html")]
struct Alert<'a> {
    message: &'a str,
    code: &'a str,
    request_id: String,
    sign_in: bool,
}

impl ResponseError for Shown {
    fn status_code(&self) -> StatusCode {
        self.error.status
    }

    fn error_response(&self) -> HttpResponse {
        // The JSON answer logs the cause and carries the request id; keep both.
        let json = self.error.error_response();
        let request_id = crate::web::request_id::current();
        let message = self.message.clone().unwrap_or_else(|| people(&self.error));
        let code = serde_json::to_value(self.error.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let alert = Alert {
            message: &message,
            code: &code,
            request_id,
            sign_in: self.error.code == ErrorCode::Unauthorized,
        };
        let mut res = html(self.error.status, alert.render().unwrap_or(message));
        if let Some(v) = json.headers().get(header::RETRY_AFTER) {
            res.headers_mut().insert(header::RETRY_AFTER, v.clone());
        }
        let Some(target) = self.outcome else {
            return res;
        };
        let h = res.headers_mut();
        h.insert(
            header::HeaderName::from_static("hx-retarget"),
            HeaderValue::from_static(target),
        );
        h.insert(
            header::HeaderName::from_static("hx-reswap"),
            HeaderValue::from_static("innerHTML"),
        );
        res
    }
}

/// The message a person reads for an error of the API.
pub fn people(e: &ApiError) -> String {
    match e.code {
        ErrorCode::LockNotAcquired => format!(
            "Another reviewer is deciding this right now, try again in {} s.",
            e.retry_after_secs.unwrap_or(1)
        ),
        ErrorCode::Unauthorized => {
            format!(
                "You are not signed in, or your token is no longer valid ({}).",
                e.message
            )
        }
        ErrorCode::DependencyUnavailable => format!("{} (503)", e.message),
        _ => e.message.clone(),
    }
}

/// How long ago `since` was, in the two largest units: "4 min 12 s", "2 h 3 min".
pub fn waited(since: DateTime<Utc>, now: DateTime<Utc>) -> String {
    duration((now - since).num_seconds())
}

/// `secs` in the two largest units ("4 min 12 s"); a negative one reads as 0 s.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    match () {
        _ if d > 0 => format!("{d} d {h} h"),
        _ if h > 0 => format!("{h} h {m} min"),
        _ if m > 0 => format!("{m} min {} s", s % 60),
        _ => format!("{s} s"),
    }
}

/// A timestamp as people read it, to the second, in UTC.
pub fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// The time of day of `t`, to the minute, in UTC ("14:05"): for times within the hour.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn waits_read_in_two_units() {
        let now = Utc::now();
        let ago = |s: i64| waited(now - Duration::seconds(s), now);
        assert_eq!(ago(0), "0 s");
        assert_eq!(ago(59), "59 s");
        assert_eq!(ago(61), "1 min 1 s");
        assert_eq!(ago(3600 + 180), "1 h 3 min");
        assert_eq!(ago(2 * 86_400 + 3 * 3600 + 5), "2 d 3 h");
        assert_eq!(ago(-5), "0 s", "a clock a little behind reads as now");
    }

    #[test]
    fn a_busy_lock_says_when_to_try_again() {
        let mut e = ApiError::new(StatusCode::CONFLICT, ErrorCode::LockNotAcquired, "locked");
        e.retry_after_secs = Some(3);
        assert_eq!(
            people(&e),
            "Another reviewer is deciding this right now, try again in 3 s."
        );
    }
}
