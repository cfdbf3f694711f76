//! `/api/v1/documents` handlers.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use super::body::{parse_json, read_body};
use super::error::{ApiError, ErrorEnvelope};
use super::idempotency::execute;
use super::views::{DocumentView, ReviewHistory, TransitionView};
use super::BodyLimit;
use crate::auth::{Caller, Role};
use crate::domain::{DocumentBody, DocumentTitle};
use crate::review::Recording;
use crate::startup::AppState;
use crate::store::pg::{RenderDocument, Transitioned, TxContext};
use crate::store::{DocumentRow, StoreError};
use serde_json::Value;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDocument {
    title: String,
    body: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDocument {
    title: Option<String>,
    body: Option<String>,
}

fn input_ok<T>(r: Result<T, crate::domain::InputError>) -> Result<T, ApiError> {
    r.map_err(|e| ApiError::validation(e.to_string()))
}

#[utoipa::path(
    post,
    path = "/api/v1/documents",
    tag = "documents",
    summary = "Create a draft document (author)",
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = CreateDocument,
    responses(
        (status = 201, description = "created", body = DocumentView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or not the document's author", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all)]
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let bytes = read_body(&req, payload, limit.0).await?;
    let (st, author) = (state.clone(), caller.id.clone());
    let body = bytes.clone();
    let hooks = state.hooks(&req);
    execute(&req, &state, &caller, &bytes, move |receipt| async move {
        let input: CreateDocument = parse_json(&body, false)?;
        let title = input_ok(DocumentTitle::parse(&input.title))?;
        let text = input_ok(DocumentBody::parse(&input.body))?;
        let id = Uuid::now_v7();
        let request_id = super::request_id::current();
        let doc = st
            .store
            .create_document(
                id,
                &title,
                &text,
                &author,
                &request_id,
                receipt
                    .as_ref()
                    .map(|r| (r, render_created as RenderDocument)),
            )
            .await?;
        tracing::info!(document_id = %doc.id, "document created");
        if hooks.fail_after_commit {
            return Err(StoreError::TimedOut(std::time::Duration::ZERO).into());
        }
        st.reviews.deliver_now(doc.id).await;
        Ok((StatusCode::CREATED, render_created(&doc)))
    })
    .await
}

/// The body of a 201 to create (also what an idempotent retry replays).
fn render_created(doc: &DocumentRow) -> Value {
    let mut view = DocumentView::from(doc);
    view.preview = Some(crate::domain::preview_of(&doc.body));
    view.body = Some(doc.body.clone());
    serde_json::to_value(view).expect("a document serializes")
}

/// The body of a transition's reply (also what an idempotent retry replays).
pub(crate) fn render_transition(t: &Transitioned) -> Value {
    serde_json::to_value(TransitionView {
        document: DocumentView::from(&t.document),
        review: t.review.clone(),
    })
    .expect("a transition serializes")
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}",
    tag = "documents",
    summary = "A document with body and preview",
    params(("id" = Uuid, Path, description = "document id")),
    responses(
        (status = 200, description = "the document", body = DocumentView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn get(
    path: web::Path<Uuid>,
    _caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let doc = state.store.get_document(*path).await?;
    let mut view = DocumentView::from(&doc);
    match state.mongo.get(doc.id).await {
        Ok(Some(p)) if p.version == doc.version => {
            view.body = Some(p.body);
            view.preview = Some(p.preview);
            view.body_source = Some("mongodb");
        }
        other => {
            if let Err(e) = other {
                tracing::warn!(error = %e, "mongodb unavailable; serving the body from postgresql");
            }
            view.preview = Some(crate::domain::preview_of(&doc.body));
            view.body = Some(doc.body);
            view.body_source = Some("postgresql");
        }
    }
    Ok(HttpResponse::Ok().json(view))
}

#[utoipa::path(
    put,
    path = "/api/v1/documents/{id}",
    tag = "documents",
    summary = "Edit title and/or body (its author; DRAFT or REJECTED)",
    params(("id" = Uuid, Path, description = "document id")),
    request_body = UpdateDocument,
    responses(
        (status = 200, description = "edited", body = DocumentView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or not the document's author", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn update(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let body: UpdateDocument = parse_json(&read_body(&req, payload, limit.0).await?, false)?;
    if body.title.is_none() && body.body.is_none() {
        return Err(ApiError::validation("give at least one of title or body"));
    }
    let title = body.title.as_deref().map(DocumentTitle::parse).transpose();
    let text = body.body.as_deref().map(DocumentBody::parse).transpose();
    let (title, text) = (input_ok(title)?, input_ok(text)?);
    let request_id = super::request_id::current();
    let ctx = TxContext {
        actor: &caller.id,
        request_id: &request_id,
        lease: None,
        pause_before_commit: None,
        receipt: None,
    };
    let doc = state
        .store
        .update_document(*path, title.as_ref(), text.as_ref(), &ctx)
        .await?;
    state.reviews.deliver_now(doc.id).await;
    let mut view = DocumentView::from(&doc);
    view.preview = Some(crate::domain::preview_of(&doc.body));
    view.body = Some(doc.body);
    Ok(HttpResponse::Ok().json(view))
}

#[utoipa::path(
    post,
    path = "/api/v1/documents/{id}/submit",
    tag = "documents",
    summary = "Submit for review (its author)",
    params(("id" = Uuid, Path, description = "document id"), ("Idempotency-Key" = Option<String>, Header, description = "Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    responses(
        (status = 201, description = "submitted: a new pending review", body = TransitionView),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or not the document's author", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "LOCK_NOT_ACQUIRED (with Retry-After), INVALID_STATE, LOCK_LOST or IDEMPOTENCY_IN_FLIGHT", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED, or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn submit(
    req: HttpRequest,
    path: web::Path<Uuid>,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let bytes = read_body(&req, payload, limit.0).await?;
    let hooks = state.hooks(&req);
    let (st, actor, document_id) = (state.clone(), caller.id.clone(), *path);
    execute(&req, &state, &caller, &bytes, move |receipt| async move {
        let recording = receipt.map(|receipt| Recording {
            receipt,
            status: 201,
            render: render_transition,
        });
        let done = st
            .reviews
            .submit(
                actor,
                document_id,
                super::request_id::current(),
                hooks,
                recording,
            )
            .await?;
        Ok((StatusCode::CREATED, render_transition(&done)))
    })
    .await
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}/reviews",
    tag = "documents",
    summary = "Review history of a document, oldest first",
    params(("id" = Uuid, Path, description = "document id")),
    responses(
        (status = 200, description = "history", body = ReviewHistory),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn history(
    path: web::Path<Uuid>,
    _caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let items = state.store.document_reviews(*path).await?;
    Ok(HttpResponse::Ok().json(ReviewHistory { items }))
}
