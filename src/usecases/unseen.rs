//! What a caller who may not see an item is told when another request holds it. An answer
//! about contention (another request holds the item's outer lock in Redis, or its row in
//! PostgreSQL past `lock_timeout`) comes before the rules have read the item, and would say
//! that it exists: to a caller with no role in the item's space (or who may not read a
//! private draft) it is `NOT_FOUND` instead, as every other answer about the item is. The
//! use cases that lock pass their results through [`hide_contention`]; the item is read
//! only when such an answer is about to be given, so the path that succeeds pays nothing,
//! and on the access pool, so a storm of refused duplicates holds no connection a
//! transaction needs.

use std::sync::Arc;

use uuid::Uuid;

use crate::domain::{Access, Reader, Refusal, UserId};
use crate::store::{PgStore, StoreError};

use super::context::Context;
use super::error::Error;

/// What a write names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item {
    Document(Uuid),
    Review(Uuid),
}

/// The caller of a use case, kept for after its [`Context`] has been handed on.
pub(crate) struct Asker {
    id: UserId,
    groups: Vec<String>,
    access: Arc<Access>,
}

impl Asker {
    pub(crate) fn of(ctx: &Context) -> Self {
        Self {
            id: ctx.actor.clone(),
            groups: ctx.groups.clone(),
            access: ctx.access.clone(),
        }
    }

    /// [`hide_contention`] for this caller; its memberships read first if its request left
    /// them to its transactions ([`Access::memberships_unread`]) and the answer is about
    /// contention.
    pub(crate) async fn hide_contention<T>(
        self,
        store: &PgStore,
        item: Item,
        result: Result<T, Error>,
    ) -> Result<T, Error> {
        let access = match &result {
            Err(e) if tells_contention(e) && self.access.is_unread() => {
                let memberships = store.memberships_of(&self.id, &self.groups).await?;
                Arc::new(self.access.joined(memberships))
            }
            _ => self.access,
        };
        let reader = Reader {
            id: &self.id,
            access: &access,
        };
        hide_contention(store, reader, item, result).await
    }
}

/// `result`, unless it is an answer about contention on `item` and `reader` may not see
/// `item` (or it does not exist): then `NOT_FOUND`.
pub(crate) async fn hide_contention<T>(
    store: &PgStore,
    reader: Reader<'_>,
    item: Item,
    result: Result<T, Error>,
) -> Result<T, Error> {
    let e = match result {
        Err(e) if tells_contention(&e) => e,
        other => return other,
    };
    let seen = match item {
        Item::Document(id) => store.document_visible(id, reader).await?,
        Item::Review(id) => store.review_visible(id, reader).await?,
    };
    match seen {
        Some(true) => Err(e),
        _ => Err(Refusal::NotFound.into()),
    }
}

/// The error says another request holds the item: its lock, or its row.
fn tells_contention(e: &Error) -> bool {
    matches!(
        e,
        Error::LockBusy(_) | Error::LockLost | Error::Store(StoreError::RowLocked)
    )
}
