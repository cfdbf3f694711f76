//! Pages of lists: the size a query may ask for, and where the next page starts.

use serde::Deserialize;

use super::error::ApiError;

/// The page size a query asks for: 1 to 100, 20 when it does not say.
pub fn limit(asked: Option<i64>) -> Result<i64, ApiError> {
    let limit = asked.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation("limit must be between 1 and 100"));
    }
    Ok(limit)
}

/// Cuts the `limit + 1` rows a list fetched down to `limit`, and returns the cursor of the
/// last row kept when more follow.
pub fn cut<T>(rows: &mut Vec<T>, limit: i64, cursor: impl Fn(&T) -> String) -> Option<String> {
    if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(cursor)
    } else {
        None
    }
}

/// A page's query: its size and where it starts.
#[derive(Deserialize, Default)]
pub struct PageQuery {
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

/// Where a page starts: after the item numbered by `cursor` (a number this service issued).
pub fn after(cursor: Option<&str>) -> Result<i64, ApiError> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1 && c.len() <= 18 && c.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ApiError::validation("cursor is not one this service issued")),
    }
}
