//! `/console`: pages for reviewers, authors and operators, rendered on the server (Askama
//! templates, checked when the crate compiles and compiled into the binary) and driven by
//! htmx (vendored, served by the service). No build step, no framework.
//!
//! A page (`/console/...`) is a shell anyone may load; what it shows is a fragment
//! (`/console/f/...`) the page fetches with the bearer token the person pasted, kept in the
//! tab's `sessionStorage` and sent as `Authorization` (no cookies, so nothing for a forged
//! cross-site request to ride on). Every fragment and action calls the use cases the JSON
//! API calls (`usecases`, through `web`: the same roles, locks, rules and idempotency) and
//! renders their typed results; it never imports `http`, nor `http` it, and it has no path
//! of its own to a store. Its routes are declared once, in the `routes!` table below.

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

use crate::web::auth::{Caller, Role};
use crate::web::error::{self, ApiError};
use render::{rendered, Shown};

/// Declares the console's routes once: [`PATHS`] lists them (for the metrics' labels and
/// the tests) and [`configure`] registers them from the same lines.
macro_rules! routes {
    ($( $method:ident $path:literal => $handler:path ),* $(,)?) => {
        /// Every console route: (method, path pattern).
        pub const PATHS: &[(&str, &str)] = &[ $( (stringify!($method), $path) ),* ];

        /// Every console route with its handler, in the order of [`PATHS`].
        fn routes() -> Vec<(&'static str, &'static str, Route)> {
            vec![ $( (stringify!($method), $path, web::route().to($handler)) ),* ]
        }
    };
}

routes! {
    get "/console" => home,
    get "/console/queue" => shell_queue,
    get "/console/mine" => shell_mine,
    get "/console/operator" => shell_operator,
    get "/console/policies" => shell_policies,
    get "/console/documents/{id}" => shell_document,
    get "/console/static/{file}" => static_file,
    get "/console/f/me" => me,
    get "/console/f/queue" => reviewer::queue,
    get "/console/f/mine" => author::mine,
    get "/console/f/operator" => operator::overview,
    get "/console/f/policies" => policies::page,
    post "/console/f/policies/save" => policies::write,
    get "/console/f/documents/{id}" => document::fragment,
    post "/console/f/documents" => author::create,
    post "/console/f/documents/{id}/edit" => author::edit,
    post "/console/f/documents/{id}/submit" => author::submit,
    post "/console/f/documents/{id}/reviews/{review}/approve" => reviewer::approve,
    post "/console/f/documents/{id}/reviews/{review}/reject" => reviewer::reject,
    post "/console/f/documents/{id}/reviews/{review}/claim" => reviewer::claim,
    post "/console/f/documents/{id}/reviews/{review}/give-back" => reviewer::give_back,
    post "/console/f/documents/{id}/withdraw" => author::withdraw,
    post "/console/f/documents/{id}/archive" => lifecycle::archive,
    get "/console/f/documents/{id}/history" => history::page,
    get "/console/f/documents/{id}/comments" => comments::page,
    post "/console/f/documents/{id}/comments/add" => lifecycle::comment,
    post "/console/f/outbox/{id}/retry" => operator::retry,
    post "/console/f/outbox/{id}/skip" => operator::skip,
    post "/console/f/replays/{id}/cancel" => replays::cancel,
}

/// The methods served on a console path (`GET, HEAD` or `POST`), as an `Allow` value.
fn allowed(method: &str) -> &'static str {
    if method == "get" {
        "GET, HEAD"
    } else {
        "POST"
    }
}

/// Registers the console: one resource per path; a GET path answers HEAD too, and any
/// other method is 405 with `Allow`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for (method, path, route) in routes() {
        let route = if method == "get" {
            route.guard(guard::Any(guard::Get()).or(guard::Head()))
        } else {
            route.guard(guard::Post())
        };
        let allow = allowed(method);
        let refuse = web::to(move || async move { error::method_not_allowed(allow) });
        cfg.service(web::resource(path).route(route).default_service(refuse));
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

const CONSOLE_JS: &str = include_str!("../../assets/console/console.js");
const CONSOLE_CSS: &str = include_str!("../../assets/console/console.css");
const CHARTS_JS: &str = include_str!("../../assets/console/charts.js");

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
