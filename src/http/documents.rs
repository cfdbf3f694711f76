//! `/api/v1/documents` handlers.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use super::body::read_json;
use super::error::ApiError;
use super::views::{DocumentView, ReviewHistory, TransitionView};
use super::BodyLimit;
use crate::auth::{Caller, Role};
use crate::domain::{DocumentBody, DocumentTitle};
use crate::startup::AppState;
use crate::store::pg::TxContext;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateDocument {
    title: String,
    body: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateDocument {
    title: Option<String>,
    body: Option<String>,
}

fn input<T>(r: Result<T, crate::domain::InputError>) -> Result<T, ApiError> {
    r.map_err(|e| ApiError::validation(e.to_string()))
}

#[tracing::instrument(skip_all, fields(document_id))]
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let body: CreateDocument = read_json(&req, payload, limit.0, false).await?;
    let title = input(DocumentTitle::parse(&body.title))?;
    let text = input(DocumentBody::parse(&body.body))?;
    let id = Uuid::now_v7();
    tracing::Span::current().record("document_id", tracing::field::display(id));
    let doc = state
        .store
        .create_document(id, &title, &text, &caller.id, &super::request_id::current())
        .await?;
    state.reviews.deliver_now(doc.id).await;
    let mut view = DocumentView::from(&doc);
    view.preview = Some(crate::domain::preview_of(&doc.body));
    view.body = Some(doc.body);
    Ok(HttpResponse::Created().json(view))
}

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
    let body: UpdateDocument = read_json(&req, payload, limit.0, false).await?;
    if body.title.is_none() && body.body.is_none() {
        return Err(ApiError::validation("give at least one of title or body"));
    }
    let title = body.title.as_deref().map(DocumentTitle::parse).transpose();
    let text = body.body.as_deref().map(DocumentBody::parse).transpose();
    let (title, text) = (input(title)?, input(text)?);
    let request_id = super::request_id::current();
    let ctx = TxContext {
        actor: &caller.id,
        request_id: &request_id,
        lease: None,
        lock_timeout: state.lock_timeout,
        pause_before_commit: None,
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

#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn submit(
    req: HttpRequest,
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let hooks = state.hooks(&req);
    let done = state
        .reviews
        .submit(caller.id, *path, super::request_id::current(), hooks)
        .await?;
    Ok(HttpResponse::Created().json(TransitionView {
        document: DocumentView::from(&done.document),
        review: done.review,
    }))
}

#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn history(
    path: web::Path<Uuid>,
    _caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let items = state.store.document_reviews(*path).await?;
    Ok(HttpResponse::Ok().json(ReviewHistory { items }))
}
