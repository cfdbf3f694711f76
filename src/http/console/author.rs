//! The author's pages: my documents by status; create (with a review policy), edit (an
//! approved document's edit starts a revision), submit, resubmit and withdraw.

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::document;
use super::render::{form, rendered, when, Shown};
use crate::http::auth::{Caller, Role};
use crate::http::documents::{self, MineQuery};
use crate::http::error::ApiError;
use crate::http::post::Ran;
use crate::http::state::AppState;
use crate::http::submission;

/// A document as the list shows it.
pub struct Row {
    pub id: String,
    pub title: String,
    pub version: i64,
    pub updated_at: String,
}

/// The documents of one status.
pub struct Group {
    pub status: &'static str,
    pub label: &'static str,
    pub rows: Vec<Row>,
    /// More than the page shows.
    pub more: bool,
}

#[derive(Template)]
#[template(path = "console/mine.html")]
struct Mine {
    groups: Vec<Group>,
    /// The policies a new document may follow, by name.
    policies: Vec<String>,
    key_create: Uuid,
}

const GROUPS: [(&str, &str); 5] = [
    ("DRAFT", "Drafts"),
    ("REJECTED", "Rejected: edit and resubmit"),
    ("PENDING_REVIEW", "Waiting for review"),
    ("APPROVED", "Approved"),
    ("ARCHIVED", "Archived"),
];

/// GET `/console/f/mine`: the caller's documents, newest first, in one group per status.
pub async fn mine(
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let mut groups = Vec::new();
    for (status, label) in GROUPS {
        let query = MineQuery {
            status: Some(status.to_string()),
            limit: Some(25),
            cursor: None,
        };
        let found = documents::mine(&state, &caller, &query).await?;
        let rows = found
            .items
            .into_iter()
            .map(|d| Row {
                id: d.id.to_string(),
                title: d.title,
                version: d.version,
                updated_at: when(d.updated_at),
            })
            .collect();
        let more = found.next_cursor.is_some();
        groups.push(Group {
            status,
            label,
            rows,
            more,
        });
    }
    let mut policies: Vec<String> = state
        .policies
        .list()
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .map(|p| p.name)
        .collect();
    policies.sort();
    rendered(&Mine {
        groups,
        policies,
        key_create: Uuid::new_v4(),
    })
}

#[derive(Deserialize)]
pub struct DocumentForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    /// The review policy (create only); left out: the configured default.
    #[serde(default)]
    policy: String,
}

impl DocumentForm {
    /// The JSON body the API's create and edit take.
    fn json(&self) -> Vec<u8> {
        let mut v = json!({ "title": self.title, "body": self.body });
        if !self.policy.is_empty() {
            v["policy"] = json!(self.policy);
        }
        serde_json::to_vec(&v).expect("a JSON value serializes")
    }
}

/// POST `/console/f/documents`: the JSON API's create; then the new document's page.
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Author).map_err(Shown::action)?;
    let f: DocumentForm = form(&req, payload, &state).await?;
    let bytes = f.json();
    let created = documents::creation(&req, &state, caller, bytes).await;
    let doc = created.and_then(Ran::succeeded).map_err(Shown::action)?;
    let id = doc.id;
    let to = HeaderValue::try_from(format!("/console/documents/{id}"))
        .map_err(|e| Shown::action(ApiError::internal(anyhow::anyhow!("redirect: {e}"))))?;
    Ok(HttpResponse::Created()
        .insert_header((HeaderName::from_static("hx-redirect"), to))
        .finish())
}

/// POST `/console/f/documents/{id}/edit`: the JSON API's edit (PUT), of both fields.
pub async fn edit(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Author).map_err(Shown::action)?;
    let f: DocumentForm = form(&req, payload, &state).await?;
    let id = super::parse_id(&path)?;
    let bytes = f.json();
    let doc = documents::edit(&state, &caller, id, &bytes)
        .await
        .map_err(Shown::action)?;
    let flash = match doc.published_version.filter(|_| doc.in_revision()) {
        Some(p) => format!(
            "Saved as version {}, a revision: version {p} stays published until it is approved.",
            doc.version
        ),
        None => "Saved.".to_string(),
    };
    document::render(&state, &caller, id, Some(flash)).await
}

/// POST `/console/f/documents/{id}/submit`: the JSON API's submit.
pub async fn submit(
    req: HttpRequest,
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    let id = super::parse_id(&path)?;
    let submitted = submission::submission(&req, &state, caller.clone(), id, Vec::new()).await;
    submitted.and_then(Ran::succeeded).map_err(Shown::action)?;
    let flash = "Submitted for review.".to_string();
    document::render(&state, &caller, id, Some(flash)).await
}

/// POST `/console/f/documents/{id}/withdraw`: the JSON API's withdraw.
pub async fn withdraw(
    req: HttpRequest,
    path: web::Path<String>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Author).map_err(Shown::action)?;
    let id = super::parse_id(&path)?;
    let withdrawn = submission::withdrawal(&req, &state, caller.clone(), id, Vec::new()).await;
    let done = withdrawn.and_then(Ran::succeeded).map_err(Shown::action)?;
    let status = done.document.status.as_str();
    let flash = format!("Withdrawn: the document is {status} again.");
    document::render(&state, &caller, id, Some(flash)).await
}
