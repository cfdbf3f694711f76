//! Who is editing a document, on its page: the edit form's lease. Shown when the page
//! loads (`GET`), taken when the person starts typing in the edit form and renewed every
//! minute while the page stays open (`POST`), its token going with the form's save; held by
//! another, their name and until when, refreshed until it ends, and "take over" for a space
//! admin (the lease broken, audited and announced, then taken).

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use uuid::Uuid;

use super::render::{rendered, when, Shown};
use crate::usecases::{LeaseSeen, LeaseState};
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::state::AppState;

/// The lease area of the edit form.
#[derive(Template)]
#[template(path = "console/lease.html")]
struct LeaseArea {
    id: Uuid,
    /// free, mine or others
    state: &'static str,
    holder: String,
    until: String,
    /// The holder's token, for the edit form (mine, just taken or renewed).
    token: String,
    may_break: bool,
    /// How often a held lease is renewed, or another's looked at again, in seconds.
    every_secs: u64,
}

fn area(id: Uuid, state: LeaseState, renew_every: u64) -> LeaseArea {
    let (name, lease, may_break) = match state {
        LeaseState::Free => ("free", None, false),
        LeaseState::Mine(l) => ("mine", Some(l), false),
        LeaseState::Others { lease, may_break } => ("others", Some(lease), may_break),
    };
    let (holder, until, token) = match lease {
        Some(LeaseSeen {
            holder,
            token,
            expires_at,
            ..
        }) => (holder, when(expires_at), token.unwrap_or_default()),
        None => Default::default(),
    };
    LeaseArea {
        id,
        state: name,
        holder,
        until,
        token,
        may_break,
        every_secs: renew_every,
    }
}

async fn answer(
    state: &AppState,
    caller: Result<Caller, ApiError>,
    path: &str,
    take: bool,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let id = super::parse_id(path)?;
    let seen = state.leases.state(caller.reader(), id, take).await;
    rendered(&area(
        id,
        seen.map_err(ApiError::from)?,
        state.leases.renew_every_secs(),
    ))
}

/// GET `/console/f/documents/{id}/lease`: who holds it.
pub async fn show(
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    answer(&state, caller, &path, false).await
}

/// POST `/console/f/documents/{id}/lease`: take or renew it (or see who holds it). Like every
/// action's, its refusal (signed out, the document no longer editable) shows above the form.
pub async fn take(
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let taken = answer(&state, caller, &path, true).await;
    taken.map_err(|e| Shown::action(e.error))
}

/// POST `/console/f/documents/{id}/lease/take-over`: break another's lease (a space admin)
/// and take it.
pub async fn take_over(
    req: HttpRequest,
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    let id = super::parse_id(&path)?;
    let ctx = state.context(&req, &caller);
    let broken = state.leases.give_back(ctx, id, true).await;
    broken.map_err(|e| Shown::action(e.into()))?;
    answer(&state, Ok(caller), &path, true).await
}
