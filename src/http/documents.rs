//! Documents: create and list (`/api/v1/documents`), read and edit
//! (`/api/v1/documents/{id}`). Their submission and withdrawal are in `submission.rs`; what
//! follows a review, in `published.rs`, `archive.rs`, `comments.rs` and `history.rs`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{de, Deserialize, Deserializer};
use uuid::Uuid;

use crate::domain::{
    Conditions, Document, DocumentBody, DocumentStatus, DocumentTitle, PolicyName, SpaceKey,
    TitleQuery,
};
use crate::usecases::{Context, DocumentsPage, EditChange};
use crate::web::auth::{Caller, Role};
use crate::web::body::{parse_json, read_body};
use crate::web::error::{ApiError, ErrorEnvelope};
use crate::web::fields;
use crate::web::paging;
use crate::web::post;
use crate::web::preconditions;
use crate::web::request_id;
use crate::web::state::AppState;
use crate::web::views::{DocumentPage, DocumentView};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDocument {
    #[schema(schema_with = fields::title)]
    title: String,
    #[schema(schema_with = fields::body)]
    body: String,
    /// The review policy its reviews follow; `review.default_policy` when left out.
    #[schema(
        pattern = "^[a-z0-9][a-z0-9_-]{0,63}$",
        max_length = 64,
        nullable = false
    )]
    #[serde(default, deserialize_with = "policy_not_null")]
    policy: Option<String>,
    /// The key of the space it is in, for life; `default` when left out. The caller must be
    /// an author there.
    #[schema(
        pattern = "^[a-z0-9][a-z0-9-]{0,62}$",
        max_length = 63,
        nullable = false
    )]
    #[serde(default, deserialize_with = "space_not_null")]
    space: Option<String>,
}

fn space_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// At least one of title and body. Either may be left out, neither may be null: its schema
/// is a string (the fuzzer found `{"title": "0", "body": null}` accepted as a title edit).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDocument {
    #[schema(schema_with = fields::title)]
    #[serde(default, deserialize_with = "title_not_null")]
    title: Option<String>,
    #[schema(schema_with = fields::body)]
    #[serde(default, deserialize_with = "body_not_null")]
    body: Option<String>,
    /// Another review policy for its next reviews (a pending review keeps its own).
    #[schema(
        pattern = "^[a-z0-9][a-z0-9_-]{0,63}$",
        max_length = 64,
        nullable = false
    )]
    #[serde(default, deserialize_with = "policy_not_null")]
    policy: Option<String>,
}

fn policy_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    not_null(d, "policy")
}

/// A policy name as given, checked for its shape (the store checks that it exists).
fn policy_ok(policy: Option<String>) -> Result<Option<String>, ApiError> {
    policy
        .map(|p| PolicyName::parse(&p).map(|n| n.as_str().to_string()))
        .transpose()
        .map_err(|e| ApiError::validation(e.to_string()))
}

fn not_null<'de, D: Deserializer<'de>>(d: D, field: &str) -> Result<Option<String>, D::Error> {
    let value = Option::<String>::deserialize(d)?;
    let refusal = || de::Error::custom(format!("{field} may be left out, but not null"));
    value.map(Some).ok_or_else(refusal)
}

fn title_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    not_null(d, "title")
}

fn body_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    not_null(d, "body")
}

fn input_ok<T>(r: Result<T, crate::domain::InputError>) -> Result<T, ApiError> {
    r.map_err(|e| ApiError::validation(e.to_string()))
}

#[utoipa::path(
    post,
    path = "/api/v1/documents",
    tag = "documents",
    summary = "Create a draft document (author)",
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "1 to 255 printable ASCII characters. Makes the POST safe to retry: the same key and request replay the first response (header Idempotent-Replayed: true)")),
    request_body = CreateDocument,
    responses(
        (status = 201, description = "created", body = DocumentView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: not an author (in the space)", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no role in the space, or no such space", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED (an unknown policy too), or IDEMPOTENCY_KEY_REUSED", body = ErrorEnvelope),
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
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let bytes = read_body(&req, payload, state.body).await?;
    let ran = creation(&req, &state, caller, bytes).await?;
    Ok(post::respond_document(
        ran,
        StatusCode::CREATED,
        DocumentView::with_body,
        |d| d.version,
    ))
}

/// Creates a draft from a JSON body.
async fn creation(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    caller: Caller,
    bytes: Vec<u8>,
) -> Result<post::Ran<Document>, ApiError> {
    caller.require(Role::Author)?;
    let (st, body) = (state.clone(), bytes.clone());
    let ctx = state.context(req, &caller);
    post::run(req, state, &caller, &bytes, move |held_key| async move {
        let input: CreateDocument = parse_json(&body, false)?;
        let title = input_ok(DocumentTitle::parse(&input.title))?;
        let text = input_ok(DocumentBody::parse(&input.body))?;
        let policy = policy_ok(input.policy)?;
        let space = match input.space {
            None => SpaceKey::default_space(),
            Some(key) => input_ok(SpaceKey::parse(&key))?,
        };
        let ctx = Context { held_key, ..ctx };
        Ok(st.documents.create(ctx, space, title, text, policy).await?)
    })
    .await
}

#[derive(Deserialize, Default)]
pub struct ListQuery {
    pub space: Option<String>,
    pub status: Option<String>,
    pub q: Option<String>,
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v1/documents",
    tag = "documents",
    summary = "A space's documents the caller may read, or the caller's own; newest first, without bodies",
    description = "With `space`: the space's documents the caller may read (a document never \
                   submitted only when it is the caller's own; a space admin's or the platform \
                   admin's: all), any role in the space; `q` keeps those whose title contains \
                   it, ignoring case. Without `space`: the caller's own documents (author), in \
                   every space where it still has a role.",
    params(
        ("space" = Option<String>, Query, pattern = "^[a-z0-9][a-z0-9-]{0,62}$", max_length = 63, description = "a space's key: its documents (no role there: 404)"),
        ("status" = Option<String>, Query, pattern = "^(DRAFT|PENDING_REVIEW|APPROVED|REJECTED|ARCHIVED|EXPIRED)$", description = "only documents in this status"),
        ("q" = Option<String>, Query, min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$", description = "with space only: titles that contain this text, ignoring case (`%`, `_` and `\\` match themselves)"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[0-9a-f]{32}$", description = "next_cursor of the previous page")
    ),
    responses(
        (status = 200, description = "a page", body = DocumentPage),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: without space, not an author", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no role in the space, or no such space", body = ErrorEnvelope),
        (status = 422, description = "VALIDATION_FAILED: a parameter out of its range, q without space, or a cursor this service did not issue", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    query: web::Query<ListQuery>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(listed(&state, &caller, &query).await?))
}

/// A page of a space's documents, or of the caller's own.
async fn listed(
    state: &AppState,
    caller: &Caller,
    query: &ListQuery,
) -> Result<DocumentPage, ApiError> {
    if query.space.is_none() {
        caller.require(Role::Author)?;
    }
    let space = query.space.as_deref().map(SpaceKey::parse).transpose();
    let title = query.q.as_deref().map(TitleQuery::parse).transpose();
    let (space, title) = (input_ok(space)?, input_ok(title)?);
    let limit = paging::limit(query.limit)?;
    let page = DocumentsPage {
        status: query.status.as_deref().map(document_status).transpose()?,
        before: query.cursor.as_deref().map(document_cursor).transpose()?,
        limit: limit + 1,
    };
    let mut docs = match (space, title) {
        (Some(space), title) => {
            let reader = caller.reader();
            let found = state
                .documents
                .in_space(reader, &space, title.as_ref(), page);
            found.await?
        }
        (None, Some(_)) => return Err(ApiError::validation("q searches a space: give space too")),
        (None, None) => state.documents.by_author(caller.reader(), page).await?,
    };
    let next_cursor = paging::cut(&mut docs, limit, |d| d.id.simple().to_string());
    Ok(DocumentPage {
        items: docs.iter().map(DocumentView::from).collect(),
        next_cursor,
    })
}

fn document_status(s: &str) -> Result<DocumentStatus, ApiError> {
    DocumentStatus::parse(s).ok_or_else(|| {
        ApiError::validation(
            "status must be one of DRAFT, PENDING_REVIEW, APPROVED, REJECTED, ARCHIVED, EXPIRED",
        )
    })
}

/// The document a cursor of this list names (its id, 32 hex digits).
fn document_cursor(c: &str) -> Result<Uuid, ApiError> {
    Uuid::try_parse(c)
        .ok()
        .filter(|_| c.len() == 32)
        .ok_or_else(paging::bad_cursor)
}

#[utoipa::path(
    get,
    path = "/api/v1/documents/{id}",
    tag = "documents",
    summary = "A document with body and preview",
    params(("id" = Uuid, Path, description = "document id"), ("If-None-Match" = Option<String>, Header, nullable = false, description = "the ETag of the version the caller holds (\"3\"): 304 while it is still the current one")),
    responses(
        (status = 200, description = "the document, with `ETag: \"<version>\"`", body = DocumentView),
        (status = 304, description = "not modified: If-None-Match names the current version"),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: the token carries none of the roles author, reviewer, admin", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 503, description = "DEPENDENCY_UNAVAILABLE: PostgreSQL is down", body = ErrorEnvelope)
    ),
    security(("bearer" = []))
)]
#[tracing::instrument(skip_all, fields(document_id = %path))]
pub async fn get(
    req: HttpRequest,
    path: web::Path<Uuid>,
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let read = state.documents.get(caller.reader(), *path).await?;
    let view = DocumentView::from(&read.document);
    let etag = preconditions::etag(read.document.version);
    let view = DocumentView {
        body: Some(read.document.body),
        preview: Some(read.preview),
        body_source: Some(read.source.as_str()),
        ..view
    };
    Ok(preconditions::read_response(&req, etag, &view))
}

#[utoipa::path(
    put,
    path = "/api/v1/documents/{id}",
    tag = "documents",
    summary = "Edit title, body and/or policy (its author; once submitted, any author of its space; DRAFT, REJECTED, or APPROVED: that starts a revision, the approved version staying published)",
    params(("id" = Uuid, Path, description = "document id"), ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^[ \t]*(\*|[ \t,]*(W/)?"[!#-~]*"[ \t]*(,[ \t,]*(W/)?"[!#-~]*"[ \t]*)*[ \t,]*)[ \t]*$"#, description = "the ETag of the version the caller read (\"3\"), or *: the write is refused 412 VERSION_MISMATCH unless the document is still at it (checked under the row lock); required (428) when http.require_if_match is on"), ("Lease-Token" = Option<String>, Header, nullable = false, min_length = 1, max_length = 64, pattern = "^[!-~]+$", description = "the token of the caller's edit lease (POST /documents/{id}/lease): 409 LEASE_LOST once that lease expired or was broken")),
    request_body = UpdateDocument,
    responses(
        (status = 200, description = "edited, with `ETag: \"<version>\"`", body = DocumentView),
        (status = 400, description = "VALIDATION_FAILED: malformed JSON, or an If-Match or Lease-Token that is not one", body = ErrorEnvelope),
        (status = 401, description = "missing, invalid or expired token", body = ErrorEnvelope),
        (status = 403, description = "FORBIDDEN: wrong role, or a draft never submitted of someone else's", body = ErrorEnvelope),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 409, description = "INVALID_STATE; DOCUMENT_LEASED (with Retry-After): another person holds its edit lease; LEASE_LOST: the Lease-Token's lease expired or was broken", body = ErrorEnvelope),
        (status = 412, description = "VERSION_MISMATCH: the document is no longer at the If-Match version", body = ErrorEnvelope),
        (status = 428, description = "PRECONDITION_REQUIRED: http.require_if_match is on and no If-Match came", body = ErrorEnvelope),
        (status = 408, description = "REQUEST_TIMEOUT: the request body did not arrive within server.body_timeout_ms", body = ErrorEnvelope),
        (status = 413, description = "VALIDATION_FAILED: body too large", body = ErrorEnvelope),
        (status = 415, description = "VALIDATION_FAILED: a request body that is not application/json", body = ErrorEnvelope),
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
) -> Result<HttpResponse, ApiError> {
    caller.require(Role::Author)?;
    let if_match = preconditions::if_match(&req, state.require_if_match)?;
    let lease_token = preconditions::lease_token(&req)?;
    let conditions = Conditions {
        if_match: if_match.as_ref(),
        lease_token: lease_token.as_deref(),
    };
    let bytes = read_body(&req, payload, state.body).await?;
    let doc = edit(&state, &caller, *path, &bytes, conditions).await?;
    let res = HttpResponse::Ok().json(DocumentView::with_body(&doc));
    Ok(preconditions::tagged(res, doc.version))
}

/// Edits a document from a JSON body, under the request's `conditions`.
async fn edit(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    bytes: &[u8],
    conditions: Conditions<'_>,
) -> Result<Document, ApiError> {
    caller.require(Role::Author)?;
    let body: UpdateDocument = parse_json(bytes, false)?;
    if body.title.is_none() && body.body.is_none() && body.policy.is_none() {
        return Err(ApiError::validation(
            "give at least one of title, body or policy",
        ));
    }
    let title = body.title.as_deref().map(DocumentTitle::parse).transpose();
    let text = body.body.as_deref().map(DocumentBody::parse).transpose();
    let (title, body, policy) = (input_ok(title)?, input_ok(text)?, policy_ok(body.policy)?);
    let change = EditChange {
        title,
        body,
        policy,
    };
    let request_id = request_id::current();
    let edit = state
        .documents
        .edit(caller.reader(), &request_id, id, change, conditions);
    Ok(edit.await?)
}
