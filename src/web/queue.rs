//! A page of the review queue as the JSON API and the console's queue show it: the reviews
//! a filter selects in the caller's reviewer spaces (or the one space it names), each with
//! its document's title, and the cursor of the next page.

use uuid::Uuid;

use super::error::ApiError;
use super::paging;
use super::state::AppState;
use super::views::{ReviewPage, ReviewView};
use crate::domain::{Access, SpaceKey};
use crate::store::QueueFilter;

/// The page `filter` selects (at most `filter.limit` reviews) in the spaces where `access`
/// is a reviewer, or in `space` alone; 422 for a cursor that names no review.
pub async fn review_page(
    state: &AppState,
    access: &Access,
    space: Option<&SpaceKey>,
    mut filter: QueueFilter,
) -> Result<ReviewPage, ApiError> {
    let limit = filter.limit;
    filter.limit = limit + 1;
    let found = state.reviews.list(access, space, &filter).await?;
    let mut items = found.ok_or_else(paging::bad_cursor)?;
    let next_cursor = paging::cut(&mut items, limit, |r| paging::review_cursor(r.id));
    let ids: Vec<Uuid> = items.iter().map(|r| r.document_id).collect();
    let mut titles = state.documents.titles(&ids).await?;
    let items = items
        .iter()
        .map(|r| ReviewView {
            document_title: titles.remove(&r.document_id),
            ..ReviewView::from(r)
        })
        .collect();
    Ok(ReviewPage { items, next_cursor })
}
