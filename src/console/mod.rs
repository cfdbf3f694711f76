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
mod lease;
mod library;
mod lifecycle;
mod members;
mod operator;
mod policies;
mod render;
mod replays;
mod review;
mod reviewer;
mod revision;
mod spaces;
mod webhooks;

use actix_web::http::header;
use actix_web::{guard, web, HttpResponse, Route};
use askama::Template;

use crate::web::auth::{Caller, Role};
use crate::web::error::{self, ApiError};
use crate::web::routing::grouped;
use crate::web::state::AppState;
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
    get "/console/documents" => shell_documents,
    get "/console/mine" => shell_mine,
    get "/console/spaces/{key}/members" => shell_members,
    get "/console/operator" => shell_operator,
    get "/console/policies" => shell_policies,
    get "/console/documents/{id}" => shell_document,
    get "/console/static/{file}" => static_file,
    get "/console/f/me" => me,
    get "/console/f/spaces" => spaces::switcher,
    get "/console/f/queue" => reviewer::queue,
    get "/console/f/documents" => library::page,
    get "/console/f/mine" => author::mine,
    get "/console/f/spaces/{key}/members" => members::page,
    post "/console/f/spaces/{key}/members/save" => members::save,
    post "/console/f/spaces/{key}/members/remove" => members::remove,
    get "/console/f/operator" => operator::overview,
    get "/console/f/policies" => policies::page,
    post "/console/f/policies/save" => policies::write,
    get "/console/f/documents/{id}" => document::fragment,
    post "/console/f/documents" => author::create,
    post "/console/f/documents/{id}/edit" => author::edit,
    get "/console/f/documents/{id}/lease" => lease::show,
    post "/console/f/documents/{id}/lease" => lease::take,
    post "/console/f/documents/{id}/lease/take-over" => lease::take_over,
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
    post "/console/f/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend" => webhooks::resend,
}

/// The methods served on a console path that has a GET route, a POST route or both, as an
/// `Allow` value.
fn allowed(get: bool, post: bool) -> &'static str {
    match (get, post) {
        (true, true) => "GET, HEAD, POST",
        (true, false) => "GET, HEAD",
        _ => "POST",
    }
}

/// Registers the console: one resource per path, holding its routes; a GET route answers
/// HEAD too, and any other method is 405 with `Allow`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let guarded = routes().into_iter().map(|(method, path, route)| {
        let route = if method == "get" {
            route.guard(guard::Any(guard::Get()).or(guard::Head()))
        } else {
            route.guard(guard::Post())
        };
        (path, (method, route))
    });
    for (path, routes) in grouped(guarded) {
        let (methods, routes): (Vec<&str>, Vec<Route>) = routes.into_iter().unzip();
        let allow = allowed(methods.contains(&"get"), methods.contains(&"post"));
        let refuse = web::to(move || async move { error::method_not_allowed(allow) });
        let resource = routes
            .into_iter()
            .fold(web::resource(path), |r, route| r.route(route));
        cfg.service(resource.default_service(refuse));
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
    /// The space switcher's fragment, on the pages about one space.
    switcher: Option<String>,
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
        switcher: None,
        load,
        trigger,
    })
}

/// A page about one space (`?space=K`; none: [`spaces::current`] picks it), with the
/// space switcher above its fragment; the URL's `q` goes to the fragment too.
fn space_shell(title: &str, page: &str, query: &spaces::SpaceQuery) -> Result<HttpResponse, Shown> {
    fn query_of<'a>(mut pairs: Vec<(&'a str, &'a str)>, query: &'a spaces::SpaceQuery) -> String {
        pairs.extend(query.space.as_deref().map(|s| ("space", s)));
        pairs.extend(query.q.as_deref().map(|q| ("q", q)));
        match serde_urlencoded::to_string(&pairs) {
            Ok(q) if !q.is_empty() => format!("?{q}"),
            _ => String::new(),
        }
    }
    rendered(&Shell {
        title: title.to_string(),
        switcher: Some(format!(
            "/console/f/spaces{}",
            query_of(vec![("to", page)], query)
        )),
        load: format!("/console/f/{page}{}", query_of(Vec::new(), query)),
        trigger: "load",
    })
}

async fn shell_queue(query: web::Query<spaces::SpaceQuery>) -> Result<HttpResponse, Shown> {
    space_shell("Review queue", "queue", &query)
}

async fn shell_documents(query: web::Query<spaces::SpaceQuery>) -> Result<HttpResponse, Shown> {
    space_shell("Documents", "documents", &query)
}

async fn shell_members(path: web::Path<String>) -> Result<HttpResponse, Shown> {
    let key = spaces::key_of(&path)?;
    shell(
        "Members",
        format!("/console/f/spaces/{key}/members"),
        "load",
    )
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
    /// The spaces where the caller holds a role: (key, name, its roles there).
    spaces: Vec<(String, String, String)>,
}

async fn me(
    caller: Result<Caller, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, Shown> {
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
    let spaces = state.spaces.list(&caller.access).await;
    let spaces = spaces
        .map_err(ApiError::from)?
        .into_iter()
        .map(|s| (s.space.key, s.space.name, s.roles.names().join(", ")))
        .collect();
    rendered(&Me {
        sub: caller.id.as_str().to_string(),
        roles: roles.join(", "),
        author: caller.has(Role::Author),
        reviewer: caller.has(Role::Reviewer),
        admin: caller.has(Role::Admin),
        spaces,
    })
}
