//! Webhooks: the endpoints a space's admins register for the space's events (Standard
//! Webhooks 1.0), their secrets, and their delivery log. Everything here is a space
//! admin's (or the platform admin's): a member without `space_admin` is refused, and a
//! space the caller holds no role in does not exist for it. Deliveries themselves are
//! made by `outbox::webhooks`.

use std::collections::HashMap;

use uuid::Uuid;

use crate::domain::webhooks::{check_event_types, check_url, AllowedRanges, WebhookSecret};
use crate::domain::{Access, EventType, SpaceKey};
use crate::outbox::webhooks::WebhookSettings;
use crate::store::{
    DeliveryRecord, NewWebhook, PgStore, SpaceActor, StoreError, StoreFailure, WebhookRecord,
    WebhookWriteError,
};

use super::context::Context;
use super::spaces::SpaceError;

pub struct WebhookService {
    store: PgStore,
    settings: WebhookSettings,
    allowed: AllowedRanges,
    https_only: bool,
}

/// Why a use case of webhooks did not complete; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// No such space (or the caller holds no role in it), endpoint or delivery.
    #[error("{0}")]
    NotFound(&'static str),
    #[error("this action needs the space_admin role in this space (or the admin role)")]
    Forbidden,
    /// A field of the request is not acceptable: its name, and why.
    #[error("{0}: {1}")]
    Invalid(&'static str, String),
    #[error(transparent)]
    Refused(WebhookWriteError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<WebhookWriteError> for WebhookError {
    fn from(e: WebhookWriteError) -> Self {
        match e {
            WebhookWriteError::NoSuchSpace => WebhookError::NotFound("no such space"),
            WebhookWriteError::Store(s) => WebhookError::Store(s),
            other => WebhookError::Refused(other),
        }
    }
}

impl StoreFailure for WebhookError {
    fn read_only(&self) -> bool {
        matches!(self, WebhookError::Store(e) if e.read_only())
    }
}

/// An endpoint registered or rotated, with its new secret (shown this once).
#[derive(Debug)]
pub struct WithSecret {
    pub webhook: WebhookRecord,
    pub secret: WebhookSecret,
}

/// The caller administers `space` (`spaces::administers`: a space it holds no role in
/// does not exist for it).
fn administers(access: &Access, space: &SpaceKey) -> Result<(), WebhookError> {
    match super::spaces::administers(access, space) {
        Ok(_) => Ok(()),
        Err(SpaceError::Forbidden(_)) => Err(WebhookError::Forbidden),
        Err(_) => Err(WebhookError::NotFound("no such space")),
    }
}

/// Who writes, as the space's chain records it.
fn actor(ctx: &Context) -> SpaceActor<'_> {
    SpaceActor {
        id: &ctx.actor,
        request_id: &ctx.request_id,
    }
}

fn found<T>(row: Option<T>) -> Result<T, WebhookError> {
    row.ok_or(WebhookError::NotFound("no such webhook in this space"))
}

impl WebhookService {
    pub fn new(store: PgStore, settings: WebhookSettings, https_only: bool) -> Self {
        Self {
            store,
            allowed: settings.allowed(),
            settings,
            https_only,
        }
    }

    /// The event types an endpoint may take: every document event the service publishes.
    pub fn event_types() -> Vec<&'static str> {
        EventType::published().map(EventType::as_str).collect()
    }

    /// Registers an endpoint of `space` at `url` for `event_types`, with a new secret.
    pub async fn create(
        &self,
        ctx: &Context,
        space: &SpaceKey,
        url: &str,
        event_types: &[String],
    ) -> Result<WithSecret, WebhookError> {
        administers(&ctx.access, space)?;
        let url = check_url(url, self.https_only, &self.allowed)
            .map_err(|e| WebhookError::Invalid("url", e))?;
        let types = check_event_types(event_types, &Self::event_types())
            .map_err(|e| WebhookError::Invalid("event_types", e))?;
        let secret = WebhookSecret::generate();
        let new = NewWebhook {
            id: Uuid::now_v7(),
            space: space.as_str(),
            url: url.as_str(),
            event_types: &types,
            secret: secret.as_str(),
            created_by: ctx.actor.as_str(),
        };
        let webhook = self.store.create_webhook(&new, actor(ctx)).await?;
        Ok(WithSecret { webhook, secret })
    }

    /// Every endpoint of `space`.
    pub async fn list(
        &self,
        access: &Access,
        space: &SpaceKey,
    ) -> Result<Vec<WebhookRecord>, WebhookError> {
        administers(access, space)?;
        Ok(self.store.webhooks(space.as_str()).await?)
    }

    /// The endpoint `id` of `space`.
    pub async fn get(
        &self,
        access: &Access,
        space: &SpaceKey,
        id: Uuid,
    ) -> Result<WebhookRecord, WebhookError> {
        administers(access, space)?;
        found(self.store.webhook(space.as_str(), id).await?)
    }

    /// Removes the endpoint `id` of `space` and its delivery log.
    pub async fn delete(
        &self,
        ctx: &Context,
        space: &SpaceKey,
        id: Uuid,
    ) -> Result<WebhookRecord, WebhookError> {
        administers(&ctx.access, space)?;
        let row = self.store.delete_webhook(space.as_str(), id, actor(ctx));
        found(row.await?)
    }

    /// Enables the endpoint `id` of `space`, or disables it (by `actor`).
    pub async fn set_enabled(
        &self,
        ctx: &Context,
        space: &SpaceKey,
        id: Uuid,
        enabled: bool,
    ) -> Result<WebhookRecord, WebhookError> {
        administers(&ctx.access, space)?;
        let reason = format!("disabled by {}", ctx.actor.as_str());
        let row = self
            .store
            .set_webhook_enabled(space.as_str(), id, enabled, &reason, actor(ctx))
            .await?;
        found(row)
    }

    /// Gives the endpoint `id` of `space` a new secret; the old one signs beside it for
    /// `webhooks.secret_overlap_secs`.
    pub async fn rotate(
        &self,
        ctx: &Context,
        space: &SpaceKey,
        id: Uuid,
    ) -> Result<WithSecret, WebhookError> {
        administers(&ctx.access, space)?;
        let secret = WebhookSecret::generate();
        let overlap = self.settings.secret_overlap;
        let row = self
            .store
            .rotate_webhook_secret(space.as_str(), id, secret.as_str(), overlap, actor(ctx))
            .await?;
        Ok(WithSecret {
            webhook: found(row)?,
            secret,
        })
    }

    /// Up to `limit` deliveries of the endpoint `id`, newest first, before `before`.
    pub async fn deliveries(
        &self,
        access: &Access,
        space: &SpaceKey,
        id: Uuid,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<DeliveryRecord>, WebhookError> {
        self.get(access, space, id).await?;
        let rows = self
            .store
            .webhook_deliveries(space.as_str(), id, before, limit)
            .await?;
        Ok(rows)
    }

    /// The operator's overview (the platform admin's alone): up to `limit` endpoints of
    /// every space, each with its latest `per` deliveries.
    pub async fn overview(
        &self,
        access: &Access,
        limit: i64,
        per: i64,
    ) -> Result<Vec<(WebhookRecord, Vec<DeliveryRecord>)>, WebhookError> {
        if !access.is_platform_admin() {
            return Err(WebhookError::Forbidden);
        }
        let hooks = self.store.all_webhooks(limit).await?;
        let ids: Vec<Uuid> = hooks.iter().map(|w| w.id).collect();
        let mut latest: HashMap<Uuid, Vec<DeliveryRecord>> = HashMap::new();
        for d in self.store.latest_deliveries(&ids, per).await? {
            latest.entry(d.webhook_id).or_default().push(d);
        }
        let with_latest = |w: WebhookRecord| {
            let mine = latest.remove(&w.id).unwrap_or_default();
            (w, mine)
        };
        Ok(hooks.into_iter().map(with_latest).collect())
    }

    /// Sends the delivery `delivery` of the endpoint `id` again, from its first attempt.
    pub async fn resend(
        &self,
        access: &Access,
        space: &SpaceKey,
        id: Uuid,
        delivery: i64,
    ) -> Result<DeliveryRecord, WebhookError> {
        administers(access, space)?;
        let row = self
            .store
            .resend_delivery(space.as_str(), id, delivery)
            .await?;
        row.ok_or(WebhookError::NotFound("no such delivery of this webhook"))
    }
}
