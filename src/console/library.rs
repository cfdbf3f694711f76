//! A space's documents: the ones the caller may read there, newest first, a page at a time,
//! with a search of their titles (`q`, a piece of the title, ignoring case), through the use
//! case behind `GET /api/v1/documents?space=&q=`; and, for an author of the space, the form
//! of a new document in it.

use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;
use uuid::Uuid;

use super::author::NewDocument;
use super::render::{rendered, when, Shown};
use super::spaces;
use crate::domain::{Document, SpaceRole, TitleQuery};
use crate::usecases::DocumentsPage;
use crate::web::auth::Caller;
use crate::web::error::ApiError;
use crate::web::paging;
use crate::web::state::AppState;

/// A document as the space's list shows it.
pub struct DocRow {
    pub id: Uuid,
    pub title: String,
    pub status: &'static str,
    pub version: i64,
    pub author: String,
    pub updated_at: String,
}

#[derive(Template)]
#[template(path = "console/documents.html")]
struct Library {
    space: String,
    name: String,
    /// The title search, as typed.
    q: String,
    rows: Vec<DocRow>,
    /// The query of the next page (`space`, `q` and `cursor`), URL-encoded.
    next: Option<String>,
    create: Option<NewDocument>,
}

#[derive(Deserialize)]
pub struct LibraryQuery {
    space: Option<String>,
    q: Option<String>,
    cursor: Option<String>,
}

/// Documents a page shows.
const ROWS: i64 = 25;

fn row(d: Document) -> DocRow {
    DocRow {
        id: d.id,
        status: d.status.as_str(),
        version: d.version,
        author: d.author_id.as_str().to_string(),
        updated_at: when(d.updated_at),
        title: d.title,
    }
}

/// GET `/console/f/documents?space=K&q=&cursor=`: the space's documents the caller may
/// read (no role there: 404, as the API), whose title contains `q` when given.
pub async fn page(
    query: web::Query<LibraryQuery>,
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let LibraryQuery { space, q, cursor } = query.into_inner();
    let key = spaces::current(&caller.access, space.as_deref(), None)?;
    let q = q.filter(|q| !q.trim().is_empty());
    let title = q.as_deref().map(TitleQuery::parse).transpose();
    let title = title.map_err(|e| ApiError::validation(e.to_string()))?;
    let before = cursor.as_deref().map(|c| {
        Uuid::try_parse(c)
            .ok()
            .filter(|_| c.len() == 32)
            .ok_or_else(paging::bad_cursor)
    });
    let seen = state.spaces.get(&caller.access, &key).await;
    let seen = seen.map_err(ApiError::from)?;
    let page = DocumentsPage {
        status: None,
        before: before.transpose()?,
        limit: ROWS + 1,
    };
    let found = state
        .documents
        .in_space(caller.reader(), &key, title.as_ref(), page);
    let mut docs = found.await.map_err(ApiError::from)?;
    let cursor = paging::cut(&mut docs, ROWS, |d| d.id.simple().to_string());
    let next = cursor.map(|c| {
        let mut pairs = vec![("space", key.as_str())];
        pairs.extend(q.as_deref().map(|q| ("q", q)));
        pairs.push(("cursor", &c));
        serde_urlencoded::to_string(&pairs).unwrap_or_default()
    });
    let create = match seen.roles.contains(SpaceRole::Author) {
        true => {
            let here = vec![(key.to_string(), seen.space.name.clone())];
            Some(NewDocument::of(&state, here, key.as_str()).await?)
        }
        false => None,
    };
    rendered(&Library {
        space: key.to_string(),
        name: seen.space.name,
        q: q.unwrap_or_default(),
        rows: docs.into_iter().map(row).collect(),
        next,
        create,
    })
}
