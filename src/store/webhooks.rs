//! Statements on `webhooks`: a space's endpoints, registered, listed, rotated, disabled and
//! removed. Every statement names the space, and row-level security admits only the
//! spaces the caller declared (`scope`). A write takes the space's row lock and adds a row
//! to the space's audit chain (`webhook.created`, ...: the endpoint as `webhook:<id>`, its
//! URL as the name); under that lock the count of a space's endpoints holds its bound.
//! Their deliveries are in `deliveries`.

pub(crate) mod deliveries;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use sqlx::{Postgres, Transaction};

use super::error::{StoreError, StoreFailure};
use super::pg::{PgStore, Statement};
use super::spaces::space::{write_change, ChangeRow};
use super::spaces::SpaceActor;
use crate::domain::SpaceAction;

/// The most endpoints a space may register.
pub const WEBHOOKS_PER_SPACE: i64 = 20;

/// An endpoint as stored, without its secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRecord {
    pub id: Uuid,
    pub space: String,
    pub url: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    pub failing_since: Option<DateTime<Utc>>,
    /// Until when the secret a rotation replaced still signs.
    pub previous_until: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An endpoint to register.
#[derive(Debug)]
pub struct NewWebhook<'a> {
    pub id: Uuid,
    pub space: &'a str,
    pub url: &'a str,
    pub event_types: &'a [String],
    pub secret: &'a str,
    pub created_by: &'a str,
}

/// Why a registration was not made.
#[derive(Debug, thiserror::Error)]
pub enum WebhookWriteError {
    #[error("no such space")]
    NoSuchSpace,
    #[error("the space has {WEBHOOKS_PER_SPACE} endpoints already, the most it may have")]
    TooMany,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StoreFailure for WebhookWriteError {
    fn read_only(&self) -> bool {
        matches!(self, WebhookWriteError::Store(e) if e.read_only())
    }
}

impl From<sqlx::Error> for WebhookWriteError {
    fn from(e: sqlx::Error) -> Self {
        WebhookWriteError::Store(e.into())
    }
}

impl PgStore {
    /// Registers `new` in its space (which must exist, with fewer than
    /// [`WEBHOOKS_PER_SPACE`] endpoints).
    pub async fn create_webhook(
        &self,
        new: &NewWebhook<'_>,
        actor: SpaceActor<'_>,
    ) -> Result<WebhookRecord, WebhookWriteError> {
        let write = async {
            let mut tx = self.begin().await?;
            let count = sqlx::query_scalar!(
                r#"SELECT (SELECT count(*) FROM webhooks WHERE space_id = s.key) AS "count!"
                   FROM spaces s WHERE s.key = $1 FOR UPDATE"#,
                new.space
            )
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(WebhookWriteError::NoSuchSpace)?;
            if count >= WEBHOOKS_PER_SPACE {
                return Err(WebhookWriteError::TooMany);
            }
            let row = sqlx::query_as!(
                WebhookRecord,
                r#"INSERT INTO webhooks (id, space_id, url, event_types, secret, created_by)
                   VALUES ($1, $2, $3, $4, $5, $6)
                   RETURNING id, space_id AS space, url, event_types, enabled, disabled_reason,
                             disabled_at, failing_since, previous_until, created_by, created_at,
                             updated_at"#,
                new.id,
                new.space,
                new.url,
                new.event_types,
                new.secret,
                new.created_by
            )
            .fetch_one(&mut *tx)
            .await?;
            chain(&mut tx, self, &row, SpaceAction::WebhookCreated, actor).await?;
            tx.commit().await?;
            Ok(row)
        };
        self.bounded(write).await
    }

    /// Every endpoint of `space`, oldest first.
    pub async fn webhooks(&self, space: &str) -> Result<Vec<WebhookRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let rows = sqlx::query_as!(
            WebhookRecord,
            r#"SELECT id, space_id AS space, url, event_types, enabled, disabled_reason,
                      disabled_at, failing_since, previous_until, created_by, created_at,
                      updated_at
               FROM webhooks WHERE space_id = $1 ORDER BY created_at, id"#,
            space
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(rows)
    }

    /// Up to `limit` endpoints of every space the caller may see, by space and age (each
    /// space's through its index).
    pub async fn all_webhooks(&self, limit: i64) -> Result<Vec<WebhookRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let rows = sqlx::query_as!(
            WebhookRecord,
            r#"SELECT w.id AS "id!", w.space_id AS "space!", w.url AS "url!",
                      w.event_types AS "event_types!", w.enabled AS "enabled!",
                      w.disabled_reason, w.disabled_at, w.failing_since, w.previous_until,
                      w.created_by AS "created_by!", w.created_at AS "created_at!",
                      w.updated_at AS "updated_at!"
               FROM spaces s CROSS JOIN LATERAL (
                 SELECT * FROM webhooks w WHERE w.space_id = s.key
                 ORDER BY w.created_at, w.id LIMIT $2) w
               ORDER BY s.key, w.created_at, w.id LIMIT $1"#,
            limit,
            WEBHOOKS_PER_SPACE
        )
        .fetch_all(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(rows)
    }

    /// The endpoint `id` of `space`.
    pub async fn webhook(
        &self,
        space: &str,
        id: Uuid,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let mut tx = self.scoped().await?;
        let row = sqlx::query_as!(
            WebhookRecord,
            r#"SELECT id, space_id AS space, url, event_types, enabled, disabled_reason,
                      disabled_at, failing_since, previous_until, created_by, created_at,
                      updated_at
               FROM webhooks WHERE space_id = $1 AND id = $2"#,
            space,
            id
        )
        .fetch_optional(&mut *tx)
        .bounded(self)
        .await?;
        self.commit(tx).await?;
        Ok(row)
    }

    /// Removes the endpoint `id` of `space`, and its deliveries.
    pub async fn delete_webhook(
        &self,
        space: &str,
        id: Uuid,
        actor: SpaceActor<'_>,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let write = async {
            let mut tx = self.begin().await?;
            lock_space(&mut tx, space).await?;
            let row = sqlx::query_as!(
                WebhookRecord,
                r#"DELETE FROM webhooks WHERE space_id = $1 AND id = $2
                   RETURNING id, space_id AS space, url, event_types, enabled, disabled_reason,
                             disabled_at, failing_since, previous_until, created_by, created_at,
                             updated_at"#,
                space,
                id
            )
            .fetch_optional(&mut *tx)
            .await?;
            finish(tx, self, row, SpaceAction::WebhookRemoved, actor).await
        };
        self.bounded(write).await
    }

    /// Enables the endpoint `id` of `space` (its failures forgotten), or disables it for
    /// `reason`.
    pub async fn set_webhook_enabled(
        &self,
        space: &str,
        id: Uuid,
        enabled: bool,
        reason: &str,
        actor: SpaceActor<'_>,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let write = async {
            let mut tx = self.begin().await?;
            lock_space(&mut tx, space).await?;
            let row = sqlx::query_as!(
                WebhookRecord,
                r#"UPDATE webhooks SET
                     enabled = $3,
                     disabled_reason = CASE WHEN $3 THEN NULL
                                            WHEN enabled THEN $4 ELSE disabled_reason END,
                     disabled_at = CASE WHEN $3 THEN NULL
                                        WHEN enabled THEN now() ELSE disabled_at END,
                     failing_since = CASE WHEN $3 THEN NULL ELSE failing_since END,
                     updated_at = now()
                   WHERE space_id = $1 AND id = $2
                   RETURNING id, space_id AS space, url, event_types, enabled, disabled_reason,
                             disabled_at, failing_since, previous_until, created_by, created_at,
                             updated_at"#,
                space,
                id,
                enabled,
                reason
            )
            .fetch_optional(&mut *tx)
            .await?;
            let action = if enabled {
                SpaceAction::WebhookEnabled
            } else {
                SpaceAction::WebhookDisabled
            };
            finish(tx, self, row, action, actor).await
        };
        self.bounded(write).await
    }

    /// Makes `secret` the endpoint's signing secret; the one it replaces signs beside it
    /// for `overlap` (a secret replaced before, if still signing, stops now).
    pub async fn rotate_webhook_secret(
        &self,
        space: &str,
        id: Uuid,
        secret: &str,
        overlap: std::time::Duration,
        actor: SpaceActor<'_>,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let write = async {
            let mut tx = self.begin().await?;
            lock_space(&mut tx, space).await?;
            let row = sqlx::query_as!(
                WebhookRecord,
                r#"UPDATE webhooks SET
                     previous_secret = secret,
                     previous_until = now() + make_interval(secs => $4),
                     secret = $3,
                     updated_at = now()
                   WHERE space_id = $1 AND id = $2
                   RETURNING id, space_id AS space, url, event_types, enabled, disabled_reason,
                             disabled_at, failing_since, previous_until, created_by, created_at,
                             updated_at"#,
                space,
                id,
                secret,
                overlap.as_secs_f64()
            )
            .fetch_optional(&mut *tx)
            .await?;
            finish(tx, self, row, SpaceAction::WebhookRotated, actor).await
        };
        self.bounded(write).await
    }
}

/// Takes the row lock of `space` (its chain's writes run one at a time), in `tx`.
async fn lock_space(
    tx: &mut Transaction<'static, Postgres>,
    space: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query_scalar!("SELECT key FROM spaces WHERE key = $1 FOR UPDATE", space)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(())
}

/// Writes `action` about the endpoint `w` into its space's chain, in `tx`.
async fn chain(
    tx: &mut Transaction<'static, Postgres>,
    store: &PgStore,
    w: &WebhookRecord,
    action: SpaceAction,
    actor: SpaceActor<'_>,
) -> Result<(), sqlx::Error> {
    let subject = format!("webhook:{}", w.id);
    let row = ChangeRow {
        action,
        subject: Some(&subject),
        roles: None,
        previous_roles: None,
        name: Some(&w.url),
        default_policy: None,
    };
    write_change(tx, store, &w.space, row, actor).await
}

/// Commits `tx` with a row of the chain about `row`'s endpoint, if there was one.
async fn finish(
    mut tx: Transaction<'static, Postgres>,
    store: &PgStore,
    row: Option<WebhookRecord>,
    action: SpaceAction,
    actor: SpaceActor<'_>,
) -> Result<Option<WebhookRecord>, StoreError> {
    if let Some(w) = &row {
        chain(&mut tx, store, w, action, actor).await?;
    }
    tx.commit().await?;
    Ok(row)
}
