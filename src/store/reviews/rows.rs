//! How a review is read: its row, with its policy version's stages, its votes and its
//! claims. Under the row lock (`lock_review`) it is one statement with the time read once
//! the lock is held; reads of many (`PgStore::with_flows`) add one statement for the page.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::domain::{Claim, FencingToken, Review, ReviewKind, ReviewStatus, Stage, Vote};
use crate::store::error::StoreError;
use crate::store::pg::{PgStore, Statement};

/// A review row, without its stages, votes and claims.
pub(crate) struct ReviewRow {
    pub id: Uuid,
    pub document_id: Uuid,
    pub status: ReviewStatus,
    pub document_version: i64,
    pub submitted_by: String,
    pub submitted_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub reason: Option<String>,
    pub fence_token: Option<FencingToken>,
    pub policy: String,
    pub policy_version: i32,
    pub stage: i32,
    pub due_at: Option<DateTime<Utc>>,
    pub kind: ReviewKind,
}

/// A review's policy stages, votes and claims.
pub(crate) struct Flow {
    /// Its policy version's `reverify_after_secs`.
    pub reverify_after_secs: Option<i32>,
    pub claim_ttl_secs: i32,
    pub stages: Vec<Stage>,
    pub votes: Vec<Vote>,
    pub claims: Vec<Claim>,
}

impl ReviewRow {
    pub(crate) fn with(self, flow: Flow) -> Review {
        Review {
            id: self.id,
            document_id: self.document_id,
            status: self.status,
            document_version: self.document_version,
            submitted_by: self.submitted_by,
            submitted_at: self.submitted_at,
            decided_by: self.decided_by,
            decided_at: self.decided_at,
            comment: self.comment,
            reason: self.reason,
            fence_token: self.fence_token,
            policy: self.policy,
            policy_version: self.policy_version,
            stage: self.stage,
            due_at: self.due_at,
            kind: self.kind,
            reverify_after_secs: flow.reverify_after_secs,
            claim_ttl_secs: flow.claim_ttl_secs,
            stages: flow.stages,
            votes: flow.votes,
            claims: flow.claims,
        }
    }
}

impl PgStore {
    /// The stages, votes and live claims of the reviews of `ids`.
    pub(crate) async fn flows(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, Flow>, StoreError> {
        let rows = sqlx::query!(
            r#"SELECT r.id, pv.reverify_after_secs, pv.claim_ttl_secs, pv.stages AS "stages!: Json<Vec<Stage>>",
                      COALESCE((SELECT json_agg(json_build_object(
                                  'voter_id', v.voter_id, 'stage', v.stage, 'kind', v.vote,
                                  'comment', v.comment, 'at', v.at) ORDER BY v.at)
                                FROM review_votes v WHERE v.review_id = r.id), '[]')
                        AS "votes!: Json<Vec<Vote>>",
                      COALESCE((SELECT json_agg(json_build_object(
                                  'reviewer_id', c.reviewer_id, 'stage', c.stage,
                                  'claimed_at', c.claimed_at, 'expires_at', c.expires_at)
                                  ORDER BY c.expires_at)
                                FROM review_claims c
                                WHERE c.review_id = r.id AND c.stage = r.stage
                                  AND c.expires_at > now()), '[]')
                        AS "claims!: Json<Vec<Claim>>"
               FROM reviews r
               JOIN policy_versions pv ON pv.name = r.policy AND pv.version = r.policy_version
               WHERE r.id = ANY($1)"#,
            ids
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let flow = Flow {
                    reverify_after_secs: r.reverify_after_secs,
                    claim_ttl_secs: r.claim_ttl_secs,
                    stages: r.stages.0,
                    votes: r.votes.0,
                    claims: r.claims.0,
                };
                (r.id, flow)
            })
            .collect())
    }

    /// `rows` with their stages, votes and live claims, in the same order.
    pub(crate) async fn with_flows(&self, rows: Vec<ReviewRow>) -> Result<Vec<Review>, StoreError> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let mut flows = self.flows(&ids).await?;
        rows.into_iter()
            .map(|r| {
                let flow = flows
                    .remove(&r.id)
                    .ok_or_else(|| anyhow::anyhow!("review {} has no policy version", r.id))?;
                Ok(r.with(flow))
            })
            .collect()
    }
}

/// The review row, locked, with its stages, votes and every claim, and the time once it
/// is held (its document is locked already, and every writer of a review locks that first,
/// so nothing here waits).
pub(crate) async fn lock_review(
    tx: &mut Transaction<'static, Postgres>,
    id: Uuid,
) -> Result<(Option<Review>, DateTime<Utc>), StoreError> {
    let Some(r) = sqlx::query!(
        r#"SELECT r.id, r.document_id, r.status AS "status: ReviewStatus", r.document_version,
                  r.submitted_by, r.submitted_at, r.decided_by, r.decided_at, r.comment,
                  r.reason, r.fence_token AS "fence_token: FencingToken", r.policy,
                  r.policy_version, r.stage, r.due_at, r.kind AS "kind: ReviewKind",
                  pv.reverify_after_secs, pv.claim_ttl_secs,
                  pv.stages AS "stages!: Json<Vec<Stage>>",
                  COALESCE((SELECT json_agg(json_build_object(
                              'voter_id', v.voter_id, 'stage', v.stage, 'kind', v.vote,
                              'comment', v.comment, 'at', v.at) ORDER BY v.at)
                            FROM review_votes v WHERE v.review_id = r.id), '[]')
                    AS "votes!: Json<Vec<Vote>>",
                  COALESCE((SELECT json_agg(json_build_object(
                              'reviewer_id', c.reviewer_id, 'stage', c.stage,
                              'claimed_at', c.claimed_at, 'expires_at', c.expires_at))
                            FROM review_claims c WHERE c.review_id = r.id), '[]')
                    AS "claims!: Json<Vec<Claim>>",
                  clock_timestamp() AS "now!"
           FROM reviews r
           JOIN policy_versions pv ON pv.name = r.policy AND pv.version = r.policy_version
           WHERE r.id = $1 FOR UPDATE OF r"#,
        id
    )
    .fetch_optional(&mut **tx)
    .await?
    else {
        return Ok((None, Utc::now()));
    };
    let row = ReviewRow {
        id: r.id,
        document_id: r.document_id,
        status: r.status,
        document_version: r.document_version,
        submitted_by: r.submitted_by,
        submitted_at: r.submitted_at,
        decided_by: r.decided_by,
        decided_at: r.decided_at,
        comment: r.comment,
        reason: r.reason,
        fence_token: r.fence_token,
        policy: r.policy,
        policy_version: r.policy_version,
        stage: r.stage,
        due_at: r.due_at,
        kind: r.kind,
    };
    let flow = Flow {
        reverify_after_secs: r.reverify_after_secs,
        claim_ttl_secs: r.claim_ttl_secs,
        stages: r.stages.0,
        votes: r.votes.0,
        claims: r.claims.0,
    };
    Ok((Some(row.with(flow)), r.now))
}
