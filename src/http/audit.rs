//! `GET /api/v1/admin/audit/verify`: the audit chain recomputed, and the first row that
//! does not match named (admin only), with what the check was made against (the latest
//! checkpoint, or why not). The same check as `kh-review audit verify`.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::BrokenAt;
use crate::usecases::{AuditError, AuditReport, CheckpointUse};
use crate::web::auth::{Caller, Role};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::state::AppState;

#[derive(Deserialize)]
pub struct VerifyQuery {
    pub document_id: Option<Uuid>,
}

/// What the check found: the rows whose links it recomputed, and the first break.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditVerify {
    /// Rows whose links were recomputed and matched.
    pub checked: u64,
    /// The first place a chain does not hold; absent when every chain holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken_at: Option<AuditBreak>,
    /// What the chains were checked against besides their heads in PostgreSQL.
    pub checkpoint: CheckpointAnswer,
}

/// The latest checkpoint's part in the check.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CheckpointAnswer {
    /// checked (the chains were checked against it), none_yet (none written yet),
    /// unavailable (the checkpoint store did not answer), broken (its signature or its link
    /// to the one before does not hold; broken_at names it unless a chain broke first)
    #[schema(example = "checked")]
    pub status: &'static str,
    /// The checkpoint's sequence (checked, broken).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    /// When it was taken (checked): rows written since are covered by the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The chains it holds (checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chains: Option<usize>,
    /// What the check could not look at, and why (every status but checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

/// Where a chain broke.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditBreak {
    /// audit_log, policy_versions, outbox_admin_actions, space_admin_actions,
    /// audit_chain_heads, space_audit_log (a space's chain), or audit_checkpoints
    #[schema(example = "audit_log")]
    pub table: &'static str,
    /// The row's id (`name/version` for a policy version); absent where no row is (a
    /// missing tail, a head).
    pub id: Option<String>,
    /// The document whose chain it is; absent for the admin chain and the spaces'.
    pub document_id: Option<Uuid>,
    /// The space whose chain it is (table space_audit_log); absent for the other chains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
    /// The position in the chain, from 1; absent for a row that carries no link.
    pub position: Option<i64>,
    /// changed (the row or its link is not what was linked), missing (a row removed),
    /// inserted (a row the chain never had), tail_missing (the head counts rows past the
    /// last), head_changed (the head's last link is another), unchained (a row with no
    /// link), rewound (the chain is shorter than the latest checkpoint says, or its row at
    /// the checkpoint's count is another: rows removed and the head set back), chain_missing
    /// (a chain of the latest checkpoint is gone; position: its count then). For table
    /// audit_checkpoints (id: the sequence): changed (not what was signed), missing (not
    /// linked to the checkpoint before it)
    #[schema(example = "changed")]
    pub found: &'static str,
}

impl From<AuditReport> for AuditVerify {
    fn from(r: AuditReport) -> Self {
        let v = r.verified;
        Self {
            checked: v.checked,
            broken_at: v.broken_at.map(|b: BrokenAt| AuditBreak {
                table: b.table,
                id: b.id,
                document_id: b.document_id,
                space: b.space,
                position: b.position,
                found: b.found.as_str(),
            }),
            checkpoint: CheckpointAnswer::from(&r.checkpoint),
        }
    }
}

impl From<&CheckpointUse> for CheckpointAnswer {
    fn from(u: &CheckpointUse) -> Self {
        let mut a = CheckpointAnswer {
            status: u.status(),
            sequence: None,
            taken_at: None,
            chains: None,
            unchecked: u.unchecked(),
        };
        match u {
            CheckpointUse::Checked {
                sequence,
                taken_at,
                chains,
            } => {
                a.sequence = Some(*sequence);
                a.taken_at = Some(*taken_at);
                a.chains = Some(*chains);
            }
            CheckpointUse::Broken { sequence, .. } => a.sequence = Some(*sequence),
            CheckpointUse::NoneYet | CheckpointUse::Unavailable(_) => {}
        }
        a
    }
}

impl From<AuditError> for ApiError {
    fn from(e: AuditError) -> Self {
        match e {
            AuditError::NoSuchDocument(_) => ApiError::not_found("no such document"),
            AuditError::Store(s) => s.into(),
        }
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/admin/audit/verify",
    tag = "admin",
    summary = "Recompute the audit chains and name the first row that does not match (admin)",
    params(
        ("document_id" = Option<Uuid>, Query, description = "check this document's chain only (default: every chain)")
    ),
    responses(
        (status = 200, description = "the check ran: broken_at is absent when every chain holds; checkpoint says what it was checked against, and what it could not check", body = AuditVerify),
        (status = 401, description = "UNAUTHORIZED: missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such document", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: document_id is not a UUID", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn verify(
    req: HttpRequest,
    query: web::Query<VerifyQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Admin)?;
    let verified = state
        .audit
        .verify(query.document_id, state.hooks(&req))
        .await?;
    Ok(HttpResponse::Ok().json(AuditVerify::from(verified)))
}
