//! Request ids: taken from `X-Request-Id` when it is sane, generated otherwise (by the
//! middleware), and readable anywhere in the request's task as [`current`].

use actix_web::http::header::HeaderValue;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    pub(crate) static CURRENT: String;
}

/// The id of the request this task serves ("unknown" outside a request).
pub fn current() -> String {
    CURRENT
        .try_with(|id| id.clone())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The header's id when it is short and plain enough to log and echo.
pub(crate) fn sane(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| s.to_string())
}

/// Runs `fut` with `id` as the current request id (for work moved to another task).
pub async fn scope<F: std::future::Future>(id: String, fut: F) -> F::Output {
    CURRENT.scope(id, fut).await
}
