//! `/console`: pages for reviewers, authors and operators, rendered on the server (Askama
//! templates, checked when the crate compiles and compiled into the binary) and driven by
//! htmx (vendored, served by the service). No build step, no framework.
//!
//! A page (`/console/...`) is a shell anyone may load; what it shows is a fragment
//! (`/console/f/...`) the page fetches with the bearer token the person pasted, kept in the
//! tab's `sessionStorage` and sent as `Authorization` (no cookies, so nothing for a forged
//! cross-site request to ride on). Every fragment and action calls the functions the JSON
//! API calls: the same roles, locks, rules and idempotency; the console has no path of its
//! own to a store.

mod author;
mod charts;
mod comments;
mod diff;
mod document;
mod history;
mod lifecycle;
mod operator;
mod policies;
mod render;
mod replays;
mod review;
mod reviewer;
mod revision;

use actix_web::http::header;
use actix_web::{guard, web, HttpResponse, Route};
use askama::Template;

use super::auth::{Caller, Role};
use super::error::ApiError;
use render::{rendered, Shown};

/// Every console route: (method, path pattern).
pub const PATHS: &[(&str, &str)] = &[
    ("get", "/console"),
    ("get", "/console/queue"),
    ("get", "/console/mine"),
    ("get", "/console/operator"),
    ("get", "/console/policies"),
    ("get", "/console/documents/{id}"),
    ("get", "/console/static/{file}"),
    ("get", "/console/f/me"),
    ("get", "/console/f/queue"),
    ("get", "/console/f/mine"),
    ("get", "/console/f/operator"),
    ("get", "/console/f/policies"),
    ("post", "/console/f/policies/save"),
    ("get", "/console/f/documents/{id}"),
    ("post", "/console/f/documents"),
    ("post", "/console/f/documents/{id}/edit"),
    ("post", "/console/f/documents/{id}/submit"),
    ("post", "/console/f/documents/{id}/reviews/{review}/approve"),
    ("post", "/console/f/documents/{id}/reviews/{review}/reject"),
    ("post", "/console/f/documents/{id}/reviews/{review}/claim"),
    (
        "post",
        "/console/f/documents/{id}/reviews/{review}/give-back",
    ),
    ("post", "/console/f/documents/{id}/withdraw"),
    ("post", "/console/f/documents/{id}/archive"),
    ("get", "/console/f/documents/{id}/history"),
    ("get", "/console/f/documents/{id}/comments"),
    ("post", "/console/f/documents/{id}/comments/add"),
    ("post", "/console/f/outbox/{id}/retry"),
    ("post", "/console/f/outbox/{id}/skip"),
    ("post", "/console/f/replays/{id}/cancel"),
];

/// The handler of a path of [`PATHS`] (its method is guarded in [`configure`]).
fn route(path: &str) -> Route {
    match path {
        "/console" => web::route().to(home),
        "/console/queue" => web::route().to(shell_queue),
        "/console/mine" => web::route().to(shell_mine),
        "/console/operator" => web::route().to(shell_operator),
        "/console/policies" => web::route().to(shell_policies),
        "/console/documents/{id}" => web::route().to(shell_document),
        "/console/static/{file}" => web::route().to(static_file),
        "/console/f/me" => web::route().to(me),
        "/console/f/queue" => web::route().to(reviewer::queue),
        "/console/f/mine" => web::route().to(author::mine),
        "/console/f/operator" => web::route().to(operator::overview),
        "/console/f/policies" => web::route().to(policies::page),
        "/console/f/policies/save" => web::route().to(policies::write),
        "/console/f/documents/{id}" => web::route().to(document::fragment),
        "/console/f/documents" => web::route().to(author::create),
        "/console/f/documents/{id}/edit" => web::route().to(author::edit),
        "/console/f/documents/{id}/submit" => web::route().to(author::submit),
        "/console/f/documents/{id}/reviews/{review}/approve" => web::route().to(reviewer::approve),
        "/console/f/documents/{id}/reviews/{review}/reject" => web::route().to(reviewer::reject),
        "/console/f/documents/{id}/reviews/{review}/claim" => web::route().to(reviewer::claim),
        "/console/f/documents/{id}/reviews/{review}/give-back" => {
            web::route().to(reviewer::give_back)
        }
        "/console/f/documents/{id}/withdraw" => web::route().to(author::withdraw),
        "/console/f/documents/{id}/archive" => web::route().to(lifecycle::archive),
        "/console/f/documents/{id}/history" => web::route().to(history::page),
        "/console/f/documents/{id}/comments" => web::route().to(comments::page),
        "/console/f/documents/{id}/comments/add" => web::route().to(lifecycle::comment),
        "/console/f/outbox/{id}/retry" => web::route().to(operator::retry),
        "/console/f/outbox/{id}/skip" => web::route().to(operator::skip),
        "/console/f/replays/{id}/cancel" => web::route().to(replays::cancel),
        other => unreachable!("no console handler for {other}"),
    }
}

/// Registers the console: one resource per path; a GET path answers HEAD too, and any
/// other method is 405 with `Allow`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for &(method, path) in PATHS {
        let handler = if method == "get" {
            route(path).guard(guard::Any(guard::Get()).or(guard::Head()))
        } else {
            route(path).guard(guard::Post())
        };
        let resource = web::resource(path).route(handler);
        cfg.service(resource.default_service(web::to(move || super::method_not_allowed(path))));
    }
}

#[derive(Template)]
#[template(path = "console/home.html")]
struct Home {
    title: &'static str,
}

#[derive(Template)]
#[template(path = "console/page.html")]
struct Shell {
    title: String,
    /// The fragment the page shows.
    load: String,
    /// When it loads (htmx `hx-trigger`): once, or also every few seconds.
    trigger: &'static str,
}

async fn home() -> Result<HttpResponse, Shown> {
    rendered(&Home { title: "Console" })
}

fn shell(title: &str, load: String, trigger: &'static str) -> Result<HttpResponse, Shown> {
    rendered(&Shell {
        title: title.to_string(),
        load,
        trigger,
    })
}

async fn shell_queue() -> Result<HttpResponse, Shown> {
    shell("Review queue", "/console/f/queue".into(), "load")
}

async fn shell_mine() -> Result<HttpResponse, Shown> {
    shell("My documents", "/console/f/mine".into(), "load")
}

async fn shell_operator() -> Result<HttpResponse, Shown> {
    shell("Operator", "/console/f/operator".into(), "load, every 5s")
}

async fn shell_policies() -> Result<HttpResponse, Shown> {
    shell("Review policies", "/console/f/policies".into(), "load")
}

async fn shell_document(path: web::Path<String>) -> Result<HttpResponse, Shown> {
    let id = parse_id(&path)?;
    shell("Document", format!("/console/f/documents/{id}"), "load")
}

/// A path's id, or the 404 the JSON API gives for one that is not a UUID.
fn parse_id(s: &str) -> Result<uuid::Uuid, Shown> {
    uuid::Uuid::try_parse(s).map_err(|_| ApiError::not_found("no such document or review").into())
}

const CONSOLE_JS: &str = include_str!("../../../assets/console/console.js");
const CONSOLE_CSS: &str = include_str!("../../../assets/console/console.css");
const CHARTS_JS: &str = include_str!("../../../assets/console/charts.js");

async fn static_file(path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (body, kind) = match path.as_str() {
        "console.js" => (CONSOLE_JS, "text/javascript; charset=utf-8"),
        "console.css" => (CONSOLE_CSS, "text/css; charset=utf-8"),
        "charts.js" => (CHARTS_JS, "text/javascript; charset=utf-8"),
        _ => return Err(ApiError::not_found("no such console file")),
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body))
}

#[derive(Template)]
#[template(path = "console/me.html")]
struct Me {
    sub: String,
    roles: String,
    author: bool,
    reviewer: bool,
    admin: bool,
}

async fn me(caller: Result<Caller, ApiError>) -> Result<HttpResponse, Shown> {
    let caller = caller?;
    let roles: Vec<&str> = caller
        .roles
        .iter()
        .map(|r| match r {
            Role::Author => "author",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        })
        .collect();
    rendered(&Me {
        sub: caller.id.as_str().to_string(),
        roles: roles.join(", "),
        author: caller.has(Role::Author),
        reviewer: caller.has(Role::Reviewer),
        admin: caller.has(Role::Admin),
    })
}
