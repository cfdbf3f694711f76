//! When a failed webhook delivery is tried again. A delivery is attempted at once, then
//! after each wait of its [`RetrySchedule`] in turn (by default 5 s, 5 min, 30 min, 2 h,
//! 5 h, 10 h, 10 h: eight attempts over about 28 hours), and given up after the last. A
//! receiver that answers with `Retry-After` ([`parse_retry_after`]) may ask for a longer
//! wait, up to [`MAX_RETRY_AFTER`], never a shorter one.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The longest wait a receiver's `Retry-After` can ask for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The most retries a schedule may have.
const MAX_RETRIES: usize = 20;

/// The longest wait a schedule may have, in seconds (a day).
const MAX_WAIT_SECS: u64 = 86_400;

/// The waits before each retry of a delivery, in order: the first after the first attempt
/// failed, and so on. Never empty.
#[derive(Debug, Clone)]
pub struct RetrySchedule(Vec<Duration>);

impl Default for RetrySchedule {
    /// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
    fn default() -> Self {
        let secs = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
        Self(secs.into_iter().map(Duration::from_secs).collect())
    }
}

impl RetrySchedule {
    /// The schedule of the setting, its waits in seconds: 1 to 20 of them, each from 1 s to
    /// a day.
    pub fn from_secs(secs: &[u64]) -> Result<Self, String> {
        if secs.is_empty() || secs.len() > MAX_RETRIES {
            return Err(format!(
                "the retry schedule has {} waits: it needs 1 to {MAX_RETRIES}",
                secs.len()
            ));
        }
        if let Some((i, s)) = secs
            .iter()
            .enumerate()
            .find(|(_, s)| !(1..=MAX_WAIT_SECS).contains(s))
        {
            return Err(format!(
                "the retry schedule's wait {} is {s} seconds: each must be 1 to {MAX_WAIT_SECS} \
                 seconds (a day)",
                i + 1
            ));
        }
        Ok(Self(
            secs.iter().copied().map(Duration::from_secs).collect(),
        ))
    }

    /// The most attempts a delivery gets: the first and one for each retry.
    pub fn attempts(&self) -> u32 {
        1 + u32::try_from(self.0.len()).unwrap_or(u32::MAX - 1)
    }

    /// The wait before the next attempt once `failed_attempts` attempts have failed (1: the
    /// first wait, ...), or `None` when no retry is left. A receiver's `retry_after` (capped
    /// at [`MAX_RETRY_AFTER`]) lengthens the wait, never shortens it.
    pub fn after(&self, failed_attempts: u32, retry_after: Option<Duration>) -> Option<Duration> {
        let index = usize::try_from(failed_attempts.checked_sub(1)?).ok()?;
        let scheduled = *self.0.get(index)?;
        Some(match retry_after {
            Some(asked) => scheduled.max(asked.min(MAX_RETRY_AFTER)),
            None => scheduled,
        })
    }
}

/// The wait a `Retry-After` header asks for (RFC 9110, section 10.2.3), read at `now`:
/// delta-seconds, or an HTTP-date (one already past asks for no wait). `None` for anything
/// else.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64 is still a wait, and longer than any cap.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = DateTime::<Utc>::from(httpdate::parse_http_date(value).ok()?);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests;
