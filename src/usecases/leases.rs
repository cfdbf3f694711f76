//! Edit leases: a person's check-out of a document while they edit it
//! (`POST/GET/DELETE /documents/{id}/lease`). Taken, renewed and given back through the
//! database lock provider (`lock::postgres`): rows in PostgreSQL that last minutes, survive
//! a Redis loss and need no watchdog. Edits are judged against them under the document's
//! row lock (`domain::leases::check_lease`); a break by a space admin is a write of its own,
//! audited and announced.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_with::{serde_as, DurationSeconds};
use uuid::Uuid;

use crate::domain::leases::lease_key;
use crate::domain::{rules, Document, Reader, Refusal};
use crate::lock::postgres::{HeldLock, PgLockProvider, Taken};
use crate::lock::Ttl;
use crate::outbox::Dispatcher;
use crate::store::{Committed, PgStore};

use super::context::Context;
use super::error::Error;

/// `[edit]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EditSettings {
    /// How long an edit lease lasts from its take or its last renewal.
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "lease_ttl_secs")]
    pub lease_ttl: Duration,
}

impl Default for EditSettings {
    fn default() -> Self {
        Self {
            lease_ttl: Duration::from_secs(300),
        }
    }
}

/// A live edit lease as a caller sees it: its token only for its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSeen {
    pub holder: String,
    pub token: Option<String>,
    pub fence: i64,
    pub expires_at: DateTime<Utc>,
}

impl LeaseSeen {
    fn of(held: HeldLock, token: Option<String>) -> Self {
        Self {
            holder: held.holder.unwrap_or_default(),
            token,
            fence: held.fence.value(),
            expires_at: held.expires_at,
        }
    }
}

/// A document's edit lease as the one who may edit it sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// Nobody holds it.
    Free,
    /// The caller holds it (its token only when just taken or renewed).
    Mine(LeaseSeen),
    /// Another holds it; `may_break`: the caller administers the document's space.
    Others { lease: LeaseSeen, may_break: bool },
}

/// What giving a lease back did.
#[derive(Debug, Clone, PartialEq)]
pub enum GivenBack {
    /// The caller's own lease, freed.
    Own,
    /// Another's, broken (audited, `document.lease_broken`): whose it was.
    Broken { holder: String },
}

pub struct LeaseService {
    store: PgStore,
    locks: PgLockProvider,
    dispatcher: Arc<Dispatcher>,
    ttl: Ttl,
}

impl LeaseService {
    pub fn new(
        store: PgStore,
        locks: PgLockProvider,
        dispatcher: Arc<Dispatcher>,
        settings: &EditSettings,
    ) -> Self {
        let fallback = Ttl::new(Duration::from_secs(300)).expect("non-zero");
        let ttl = Ttl::new(settings.lease_ttl).unwrap_or(fallback);
        Self {
            store,
            locks,
            dispatcher,
            ttl,
        }
    }

    /// How often a page that holds a lease renews it (and one that shows another's looks
    /// again): a fifth of the lease's time, at least a second, at most a minute.
    pub fn renew_every_secs(&self) -> u64 {
        (self.ttl.as_duration().as_secs() / 5).clamp(1, 60)
    }

    /// Takes the document's edit lease for the caller, or renews the caller's (same token,
    /// same fence), if the caller may edit the document now. Held by another: refused,
    /// naming the holder and when it ends.
    pub async fn take(&self, reader: Reader<'_>, id: Uuid) -> Result<LeaseSeen, Error> {
        self.editable(reader, id).await?;
        let me = reader.id.as_str();
        match self.locks.take(&lease_key(id), self.ttl, Some(me)).await? {
            Taken::Held(token, held) => Ok(LeaseSeen::of(held, Some(token.as_str().to_string()))),
            Taken::Busy(held) => Err(leased(held).into()),
        }
    }

    /// The lease as `reader` sees it, after taking or renewing it (`take`) or not.
    pub async fn state(
        &self,
        reader: Reader<'_>,
        id: Uuid,
        take: bool,
    ) -> Result<LeaseState, Error> {
        let doc = self.editable(reader, id).await?;
        let may_break = reader.administers(&doc.space);
        let me = reader.id.as_str();
        let key = lease_key(id);
        let found = match take {
            true => match self.locks.take(&key, self.ttl, Some(me)).await? {
                Taken::Held(token, held) => Some((held, Some(token.as_str().to_string()))),
                Taken::Busy(held) => Some((held, None)),
            },
            false => self.locks.held(&key).await?.map(|h| (h, None)),
        };
        Ok(match found {
            None => LeaseState::Free,
            Some((held, token)) if held.holder.as_deref() == Some(me) => {
                LeaseState::Mine(LeaseSeen::of(held, token))
            }
            Some((held, _)) => LeaseState::Others {
                lease: LeaseSeen::of(held, None),
                may_break,
            },
        })
    }

    /// The live lease on the document, if any, without its token.
    pub async fn current(&self, reader: Reader<'_>, id: Uuid) -> Result<Option<LeaseSeen>, Error> {
        self.readable(reader, id).await?;
        let held = self.locks.held(&lease_key(id)).await?;
        Ok(held.map(|h| LeaseSeen::of(h, None)))
    }

    /// Gives the caller's lease back; with `force`, breaks another's (a space admin's or the
    /// admin's: audited and announced). Nobody's: not found.
    pub async fn give_back(&self, ctx: Context, id: Uuid, force: bool) -> Result<GivenBack, Error> {
        let reader = ctx.reader();
        self.readable(reader, id).await?;
        let key = lease_key(id);
        if self.locks.give_back(&key, reader.id.as_str()).await? {
            return Ok(GivenBack::Own);
        }
        if !force {
            return match self.locks.held(&key).await? {
                Some(held) => Err(leased(held).into()),
                None => Err(Refusal::NoLease.into()),
            };
        }
        let wctx = ctx.writing(
            crate::domain::Guard::Unlocked,
            self.dispatcher.own_outbox_for(),
        );
        let done = self
            .store
            .bounded(async {
                let uncommitted = self.store.write_lease_break(id, &wctx).await?;
                Ok::<_, Error>(uncommitted.commit().await?)
            })
            .await;
        let Committed { value, owned } = done?;
        tracing::info!(document_id = %id, holder = %value.holder, "edit lease broken");
        self.dispatcher.after_commit(&value.document, owned).await;
        Ok(GivenBack::Broken {
            holder: value.holder,
        })
    }

    /// The document, if `reader` may edit it now (`rules::may_edit`): only then is its
    /// lease taken.
    async fn editable(&self, reader: Reader<'_>, id: Uuid) -> Result<Document, Error> {
        let doc = self.store.document(id).await?.ok_or(Refusal::NotFound)?;
        rules::may_edit(&doc, reader)?;
        Ok(doc)
    }

    /// Not found unless the document exists and `reader` may read it: the lease of a
    /// document one cannot see is not seen either.
    async fn readable(&self, reader: Reader<'_>, id: Uuid) -> Result<(), Error> {
        let doc = self.store.document(id).await?;
        match doc.is_some_and(|d| d.readable_by(reader)) {
            true => Ok(()),
            false => Err(Refusal::NotFound.into()),
        }
    }
}

/// The refusal of a lease another holds: its holder, and when it ends.
fn leased(held: HeldLock) -> Refusal {
    Refusal::DocumentLeased {
        holder: held.holder.unwrap_or_default(),
        until: held.expires_at,
        retry_after_secs: held.expires_in.as_secs_f64().ceil().max(1.0) as u64,
    }
}
