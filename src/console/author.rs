//! The author's pages: my documents by status; create (in a space where the caller is an
//! author, with a review policy), edit (an approved document's edit starts a revision),
//! submit, resubmit and withdraw.

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use uuid::Uuid;

use super::document;
use super::render::{form, rendered, sent_form, when, Shown};
use crate::domain::{
    Conditions, DocumentBody, DocumentStatus, DocumentTitle, IfMatch, InputError, PolicyName,
    SpaceKey, SpaceRole, DEFAULT_SPACE,
};
use crate::usecases::{Context, DocumentsPage};
use crate::web::auth::{Caller, Role};
use crate::web::error::ApiError;
use crate::web::post::{self, Ran};
use crate::web::state::AppState;

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
    create: NewDocument,
}

/// The form of a new document (`create_form.html`).
pub struct NewDocument {
    /// The spaces it may be created in (where the caller is an author): (key, label).
    pub spaces: Vec<(String, String)>,
    /// The space preselected.
    pub space: String,
    /// The policies a new document may follow, by name.
    pub policies: Vec<String>,
    pub key_create: Uuid,
}

impl NewDocument {
    /// The form for `spaces`, with `space` preselected (the first when it is not one).
    pub async fn of(
        state: &AppState,
        spaces: Vec<(String, String)>,
        space: &str,
    ) -> Result<Self, ApiError> {
        let mut policies: Vec<String> = state
            .policies
            .list()
            .await?
            .into_iter()
            .map(|p| p.name)
            .collect();
        policies.sort();
        let known = spaces.iter().any(|(k, _)| k == space);
        let space = match spaces.first() {
            Some((first, _)) if !known => first.clone(),
            _ => space.to_string(),
        };
        Ok(Self {
            spaces,
            space,
            policies,
            key_create: Uuid::new_v4(),
        })
    }
}

const GROUPS: [(DocumentStatus, &str); 6] = [
    (DocumentStatus::Draft, "Drafts"),
    (DocumentStatus::Rejected, "Rejected: edit and resubmit"),
    (DocumentStatus::Expired, "Expired: revise and resubmit"),
    (DocumentStatus::PendingReview, "Waiting for review"),
    (DocumentStatus::Approved, "Approved"),
    (DocumentStatus::Archived, "Archived"),
];

/// Documents a group shows.
const GROUP_ROWS: i64 = 25;

/// GET `/console/f/mine`: the caller's documents, newest first, in one group per status
/// (in the spaces where it still has a role).
pub async fn mine(
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    caller.require(Role::Author)?;
    let mut groups = Vec::new();
    for (status, label) in GROUPS {
        let page = DocumentsPage {
            status: Some(status),
            before: None,
            limit: GROUP_ROWS + 1,
        };
        let mut found = state
            .documents
            .by_author(caller.reader(), page)
            .await
            .map_err(ApiError::from)?;
        let more = found.len() as i64 > GROUP_ROWS;
        found.truncate(GROUP_ROWS as usize);
        let rows = found
            .into_iter()
            .map(|d| Row {
                id: d.id.to_string(),
                title: d.title,
                version: d.version,
                updated_at: when(d.updated_at),
            })
            .collect();
        groups.push(Group {
            status: status.as_str(),
            label,
            rows,
            more,
        });
    }
    let authoring: Vec<(String, String)> = state
        .spaces
        .list(&caller.access)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .filter(|s| s.roles.contains(SpaceRole::Author))
        .map(|s| {
            (
                s.space.key.clone(),
                format!("{} ({})", s.space.name, s.space.key),
            )
        })
        .collect();
    let create = NewDocument::of(&state, authoring, DEFAULT_SPACE).await?;
    rendered(&Mine { groups, create })
}

#[derive(Deserialize)]
pub struct DocumentForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    /// The review policy (create only); left out: the space's default, else the setting.
    #[serde(default)]
    policy: String,
    /// The space (create only); left out: `default`.
    #[serde(default)]
    space: String,
    /// The version the edit form showed (edit only): the edit is refused if another one
    /// saved since, instead of overwriting it.
    #[serde(default)]
    version: Option<i64>,
    /// The token of the edit lease the page holds (edit only), if it holds one.
    #[serde(default)]
    lease_token: Option<String>,
}

impl DocumentForm {
    /// The title and body as the rules take them.
    fn text(&self) -> Result<(DocumentTitle, DocumentBody), ApiError> {
        let title = input(DocumentTitle::parse(&self.title))?;
        let body = input(DocumentBody::parse(&self.body))?;
        Ok((title, body))
    }

    /// The policy named (its shape checked; the store checks that it exists), if any.
    fn policy(&self) -> Result<Option<String>, ApiError> {
        if self.policy.is_empty() {
            return Ok(None);
        }
        let name = input(PolicyName::parse(&self.policy))?;
        Ok(Some(name.as_str().to_string()))
    }

    /// The space a new document goes to: the one named, else `default`.
    fn space(&self) -> Result<SpaceKey, ApiError> {
        match self.space.as_str() {
            "" => Ok(SpaceKey::default_space()),
            key => input(SpaceKey::parse(key)),
        }
    }
}

fn input<T>(r: Result<T, InputError>) -> Result<T, ApiError> {
    r.map_err(|e| ApiError::validation(e.to_string()))
}

/// POST `/console/f/documents`: the JSON API's create, in the space the form names
/// (`default` when none: no role there 404, not an author there 403); then the new
/// document's page.
pub async fn create(
    req: HttpRequest,
    payload: web::Payload,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller.map_err(Shown::action)?;
    caller.require(Role::Author).map_err(Shown::action)?;
    let (f, bytes): (DocumentForm, _) = sent_form(&req, payload, &state).await?;
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let created = post::run(&req, &state, &caller, &bytes, move |held_key| async move {
        let (title, text) = f.text()?;
        let policy = f.policy()?;
        let space = f.space()?;
        let ctx = Context { held_key, ..ctx };
        Ok(st.documents.create(ctx, space, title, text, policy).await?)
    })
    .await;
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
    let doc = edited(&state, &caller, id, &f)
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

/// The edit of both fields (and the policy, when one is named).
async fn edited(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    f: &DocumentForm,
) -> Result<crate::domain::Document, ApiError> {
    let (title, text) = f.text()?;
    let change = crate::usecases::EditChange {
        title: Some(title),
        body: Some(text),
        policy: f.policy()?,
    };
    let shown = f.version.map(|v| IfMatch::Versions(vec![v]));
    let conditions = Conditions {
        if_match: shown.as_ref(),
        lease_token: f.lease_token.as_deref().filter(|t| !t.is_empty()),
    };
    let request_id = crate::web::request_id::current();
    let (reader, documents) = (caller.reader(), &state.documents);
    let doc = documents.edit(reader, &request_id, id, change, conditions);
    Ok(doc.await?)
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
    caller.require(Role::Author).map_err(Shown::action)?;
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let submitted = post::run(&req, &state, &caller, &[], move |held_key| async move {
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.submit(ctx, id).await?)
    })
    .await;
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
    let (st, ctx) = (state.clone(), state.context(&req, &caller));
    let withdrawn = post::run(&req, &state, &caller, &[], move |held_key| async move {
        let ctx = Context { held_key, ..ctx };
        Ok(st.reviews.withdraw(ctx, id).await?)
    })
    .await;
    let done = withdrawn.and_then(Ran::succeeded).map_err(Shown::action)?;
    let status = done.document.status.as_str();
    let flash = format!("Withdrawn: the document is {status} again.");
    document::render(&state, &caller, id, Some(flash)).await
}
