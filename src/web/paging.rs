//! Pages of lists: the size a query may ask for, and where the next page starts (the
//! cursors the JSON API and the console issue and read).

use uuid::Uuid;

use super::error::ApiError;

/// A page's query: its size and where it starts.
#[derive(serde::Deserialize, Default)]
pub struct PageQuery {
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

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

/// A cursor names the last review of a page; the next page starts after it in the queue's
/// order (its `queue_seq`). Cursors issued before that order existed were
/// `<submitted_at micros>.<review id>`: their review id is read the same way.
pub fn review_cursor(id: Uuid) -> String {
    id.simple().to_string()
}

/// The review a cursor of [`review_cursor`] (or of the older form) names; 422 otherwise.
pub fn after_review(s: &str) -> Result<Uuid, ApiError> {
    let id = match s.split_once('.') {
        Some((micros, id)) if micros.parse::<i64>().is_ok() => id,
        Some(_) => return Err(bad_cursor()),
        None => s,
    };
    Uuid::parse_str(id).map_err(|_| bad_cursor())
}

/// The refusal of a cursor this service did not issue.
pub fn bad_cursor() -> ApiError {
    ApiError::validation("cursor is not one this service issued")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let id = Uuid::now_v7();
        assert_eq!(after_review(&review_cursor(id)).unwrap(), id);
        let before = format!("1700000000123456.{}", id.simple());
        assert_eq!(
            after_review(&before).unwrap(),
            id,
            "a cursor of the old form"
        );
        for bad in ["", "x", "1.", ".abc", "1.not-a-uuid", "' OR 1=1 --"] {
            assert!(after_review(bad).is_err(), "{bad}");
        }
    }
}
