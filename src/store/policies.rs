//! Statements on review policies. A write makes the policy's next version in one statement:
//! the upsert of its `policies` row takes that row's lock (so two writes of one policy get
//! consecutive numbers) and the new version is inserted beside it. Versions are never
//! changed or deleted: `policy_versions` is the policy's history.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::PgExecutor;

use super::error::StoreError;
use super::pg::{PgStore, Statement};
use crate::domain::{Policy, PolicyDraft, PolicyName, Stage};
use crate::store::audit::linking::{link_admin, Only};

struct PolicyRow {
    name: String,
    version: i32,
    stages: Json<Vec<Stage>>,
    due_after_secs: Option<i32>,
    claim_ttl_secs: i32,
    reverify_after_secs: Option<i32>,
    reverify_grace_secs: Option<i32>,
    updated_at: DateTime<Utc>,
}

impl From<PolicyRow> for Policy {
    fn from(r: PolicyRow) -> Self {
        Policy {
            name: r.name,
            version: r.version,
            stages: r.stages.0,
            due_after_secs: r.due_after_secs,
            claim_ttl_secs: r.claim_ttl_secs,
            reverify_after_secs: r.reverify_after_secs,
            reverify_grace_secs: r.reverify_grace_secs,
            updated_at: r.updated_at,
        }
    }
}

/// The current version of the policy `name`, if there is one.
pub(super) async fn current_policy(
    db: impl PgExecutor<'_>,
    name: &str,
) -> Result<Option<Policy>, sqlx::Error> {
    let row = sqlx::query_as!(
        PolicyRow,
        r#"SELECT p.name, p.version, v.stages AS "stages: Json<Vec<Stage>>", v.due_after_secs,
                  v.claim_ttl_secs, v.reverify_after_secs, v.reverify_grace_secs, p.updated_at
           FROM policies p JOIN policy_versions v ON v.name = p.name AND v.version = p.version
           WHERE p.name = $1"#,
        name
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(Policy::from))
}

impl PgStore {
    /// The current version of the policy `name`.
    pub async fn policy(&self, name: &str) -> Result<Option<Policy>, StoreError> {
        current_policy(&self.pool, name).bounded(self).await
    }

    /// The current version of every policy, by name.
    pub async fn policies(&self) -> Result<Vec<Policy>, StoreError> {
        let rows = sqlx::query_as!(
            PolicyRow,
            r#"SELECT p.name, p.version, v.stages AS "stages: Json<Vec<Stage>>",
                      v.due_after_secs, v.claim_ttl_secs, v.reverify_after_secs,
                      v.reverify_grace_secs, p.updated_at
               FROM policies p
               JOIN policy_versions v ON v.name = p.name AND v.version = p.version
               ORDER BY p.name LIMIT 1000"#
        )
        .fetch_all(&self.pool)
        .bounded(self)
        .await?;
        Ok(rows.into_iter().map(Policy::from).collect())
    }

    /// Writes `draft` as the next version of `name` (version 1 of a new policy).
    pub async fn put_policy(
        &self,
        name: &PolicyName,
        draft: &PolicyDraft,
        actor: &str,
    ) -> Result<Policy, StoreError> {
        let stages = serde_json::to_value(&draft.stages).map_err(anyhow::Error::from)?;
        let write = async {
            let mut tx = self.begin().await?;
            let row = sqlx::query!(
                r#"WITH head AS (
                 INSERT INTO policies (name, version) VALUES ($1, 1)
                 ON CONFLICT (name) DO UPDATE
                   SET version = policies.version + 1, updated_at = clock_timestamp()
                 RETURNING version, updated_at)
               INSERT INTO policy_versions (name, version, stages, due_after_secs,
                                            claim_ttl_secs, created_by, reverify_after_secs,
                                            reverify_grace_secs)
               SELECT $1, version, $2, $3, $4, $5, $6, $7 FROM head
               RETURNING version, (SELECT updated_at FROM head) AS "updated_at!""#,
                name.as_str(),
                stages,
                draft.due_after_secs,
                draft.claim_ttl_secs,
                actor,
                draft.reverify.after_secs,
                draft.reverify.grace_secs,
            )
            .fetch_one(&mut *tx)
            .await?;
            // The version joins the admin chain, under its head's row lock.
            let only = Only::Policy(name.as_str(), row.version);
            link_admin(&mut tx, &self.audit, only).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(row)
        };
        let row = self.bounded(write).await?;
        Ok(Policy {
            name: name.as_str().to_string(),
            version: row.version,
            stages: draft.stages.clone(),
            due_after_secs: draft.due_after_secs,
            claim_ttl_secs: draft.claim_ttl_secs,
            reverify_after_secs: draft.reverify.after_secs,
            reverify_grace_secs: draft.reverify.grace_secs,
            updated_at: row.updated_at,
        })
    }
}
