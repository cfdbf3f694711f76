//! `/api/v1/documents` handlers.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use uuid::Uuid;

use super::body::{parse_json, read_body};
use super::error::ApiError;
use super::idempotency::{execute, Reply};
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

fn input_ok<T>(r: Result<T, crate::domain::InputError>) -> Result<T, ApiError> {
    r.map_err(|e| ApiError::validation(e.to_string()))
}

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
    execute(&req, &state, &caller, &bytes, async move {
        let input: CreateDocument = parse_json(&body, false)?;
        let title = input_ok(DocumentTitle::parse(&input.title))?;
        let text = input_ok(DocumentBody::parse(&input.body))?;
        let id = Uuid::now_v7();
        let doc = st
            .store
            .create_document(id, &title, &text, &author, &super::request_id::current())
            .await?;
        tracing::info!(document_id = %doc.id, "document created");
        st.reviews.deliver_now(doc.id).await;
        let mut view = DocumentView::from(&doc);
        view.preview = Some(crate::domain::preview_of(&doc.body));
        view.body = Some(doc.body);
        json_reply(StatusCode::CREATED, &view)
    })
    .await
}

fn json_reply<T: serde::Serialize>(status: StatusCode, v: &T) -> Reply {
    let body = serde_json::to_value(v).map_err(|e| ApiError::internal(e.into()))?;
    Ok((status, body))
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
    payload: web::Payload,
    caller: Caller,
    state: web::Data<AppState>,
    limit: web::Data<BodyLimit>,
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let bytes = read_body(&req, payload, limit.0).await?;
    let hooks = state.hooks(&req);
    let (st, actor, document_id) = (state.clone(), caller.id.clone(), *path);
    execute(&req, &state, &caller, &bytes, async move {
        let done = st
            .reviews
            .submit(actor, document_id, super::request_id::current(), hooks)
            .await?;
        json_reply(
            StatusCode::CREATED,
            &TransitionView {
                document: DocumentView::from(&done.document),
                review: done.review,
            },
        )
    })
    .await
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
