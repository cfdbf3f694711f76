//! The JSON API: its routes and handlers. Handlers parse input, check roles and call the
//! use cases of `usecases`; they hold no SQL, no locking and no rules. What they share with
//! the console (auth, `AppState`, the error envelope, views) is in `web`, below both.
//! Nothing below this layer imports it, nor does the console.

pub(crate) mod admin;
pub(crate) mod archive;
mod assets;
mod audit;
pub(crate) mod claims;
pub(crate) mod comments;
pub(crate) mod diffs;
pub(crate) mod documents;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod history;
pub(crate) mod leases;
pub(crate) mod members;
mod openapi;
pub(crate) mod policies;
pub(crate) mod published;
pub(crate) mod replays;
pub(crate) mod reviews;
pub(crate) mod spaces;
pub(crate) mod submission;
pub(crate) mod webhook_deliveries;
pub(crate) mod webhooks;

use actix_web::error::{PathError, QueryPayloadError};
use actix_web::{web, Handler, HttpRequest, HttpResponse, Resource, Route, Scope};

use crate::web::error::{self, ApiError};
use crate::web::routing::grouped;

/// Declares the routes once, and everything else about them comes from this table: their
/// registration (one resource per path; any other method on it answers 405 with `Allow`,
/// and a GET route also answers HEAD, the same handler, actix sending the headers only),
/// their list [`ROUTES`] (the metrics' route labels and `Allow`), and their OpenAPI
/// operations, [`Described`], from each handler's `#[utoipa::path]` annotation with the
/// schemas its request and responses reference (`openapi.rs` merges it into the
/// description). A new route is its handler and one line here; the OpenAPI test compares
/// this table with the description, so the annotation's method and path cannot drift.
///
/// Not `utoipa-actix-web` (0.2, the release for utoipa 6), which collects the operations
/// from the services registered on the App: it collects only handlers registered with
/// actix's route macros (`#[get("/path")]`, each its own resource guarded by its method),
/// not routes built with `web::get().to(..)`. That gives no resource per path, so a wrong
/// method on a known path falls through to the 404 (and its request would be counted under
/// `other`, with no pattern matched); HEAD would need `#[route(method = "GET", method =
/// "HEAD")]`, which puts HEAD operations into the description; one handler serves one path
/// (`/openapi.json` is served at two); and the description exists only once an App is
/// built. So the table stays, and makes the `paths(...)` list too.
macro_rules! routes {
    (
        also at: [$( $also:ident $also_path:literal => $($also_handler:ident)::+ ),* $(,)?];
        $( $method:ident $path:literal => $($handler:ident)::+ ),* $(,)?
    ) => {
        /// Every route with its path, in declaration order, and HEAD beside each GET.
        fn routes() -> Vec<(&'static str, Route)> {
            let mut all = Vec::new();
            $( routes!(@add all, $also, $also_path, $($also_handler)::+); )*
            $( routes!(@add all, $method, $path, $($handler)::+); )*
            all
        }
        /// Every (method, path) the service serves.
        pub const ROUTES: &[(&str, &str)] = &[
            $( (stringify!($also), $also_path), )*
            $( (stringify!($method), $path), )*
        ];
        /// The operations of every route and the schemas they reference, as their
        /// handlers' `#[utoipa::path]` annotations describe them (the routes `also at` a
        /// second address are described once, at their first).
        #[derive(utoipa::OpenApi)]
        #[openapi(paths( $( $($handler)::+ ),* ))]
        pub(crate) struct Described;
    };
    (@add $all:ident, $method:ident, $path:literal, $handler:path) => {
        $all.push(($path, web::$method().to($handler)));
        if stringify!($method) == "get" {
            $all.push(($path, web::head().to($handler)));
        }
    };
}

routes! {
    also at: [get "/api/v1/openapi.json" => openapi::openapi_json];
    get "/healthz" => health::healthz,
    get "/readyz" => health::readyz,
    get "/metrics" => health::metrics,
    get "/openapi.json" => openapi::openapi_json,
    get "/docs" => openapi::docs,
    get "/asyncapi.json" => events::asyncapi_json,
    get "/schemas/events/{type}.json" => events::event_schema,
    post "/api/v1/documents" => documents::create,
    get "/api/v1/documents" => documents::list,
    get "/api/v1/documents/{id}" => documents::get,
    put "/api/v1/documents/{id}" => documents::update,
    post "/api/v1/documents/{id}/submit" => submission::submit,
    get "/api/v1/documents/{id}/reviews" => history::history,
    post "/api/v1/documents/{id}/withdraw" => submission::withdraw,
    post "/api/v1/documents/{id}/archive" => archive::archive,
    get "/api/v1/documents/{id}/published" => published::published,
    get "/api/v1/documents/{id}/diff" => diffs::diff,
    post "/api/v1/documents/{id}/lease" => leases::take,
    get "/api/v1/documents/{id}/lease" => leases::current,
    delete "/api/v1/documents/{id}/lease" => leases::give_back,
    post "/api/v1/documents/{id}/comments" => comments::comment,
    get "/api/v1/documents/{id}/comments" => comments::comments,
    get "/api/v1/reviews" => reviews::list,
    post "/api/v1/reviews/{id}/approve" => reviews::approve,
    post "/api/v1/reviews/{id}/reject" => reviews::reject,
    post "/api/v1/reviews/{id}/claim" => claims::claim,
    delete "/api/v1/reviews/{id}/claim" => claims::give_back,
    delete "/api/v1/reviews/{id}/claims/{reviewer_id}" => claims::end_claim,
    get "/api/v1/policies" => policies::list,
    get "/api/v1/policies/{name}" => policies::get,
    put "/api/v1/admin/policies/{name}" => policies::put,
    get "/api/v1/admin/outbox" => admin::list,
    get "/api/v1/admin/outbox/stats" => admin::stats,
    post "/api/v1/admin/outbox/{id}/retry" => admin::retry,
    post "/api/v1/admin/outbox/{id}/skip" => admin::skip,
    post "/api/v1/admin/replays" => replays::start,
    get "/api/v1/admin/replays" => replays::list,
    get "/api/v1/admin/replays/{id}" => replays::get,
    delete "/api/v1/admin/replays/{id}" => replays::cancel,
    get "/api/v1/admin/audit/verify" => audit::verify,
    post "/api/v1/admin/spaces" => spaces::create,
    get "/api/v1/spaces" => spaces::list,
    get "/api/v1/spaces/{key}" => spaces::get,
    patch "/api/v1/spaces/{key}" => spaces::update,
    get "/api/v1/spaces/{key}/members" => members::members,
    put "/api/v1/spaces/{key}/members/{subject}" => members::put_member,
    delete "/api/v1/spaces/{key}/members/{subject}" => members::remove_member,
    post "/api/v1/spaces/{key}/webhooks" => webhooks::create,
    get "/api/v1/spaces/{key}/webhooks" => webhooks::list,
    get "/api/v1/spaces/{key}/webhooks/{webhook_id}" => webhooks::get,
    patch "/api/v1/spaces/{key}/webhooks/{webhook_id}" => webhooks::update,
    delete "/api/v1/spaces/{key}/webhooks/{webhook_id}" => webhooks::delete,
    post "/api/v1/spaces/{key}/webhooks/{webhook_id}/rotate" => webhooks::rotate,
    get "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries" => webhook_deliveries::list,
    post "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend" => webhook_deliveries::resend,
}

/// The paths of the pages and files served beside the JSON API, GET and HEAD only. Not in
/// [`ROUTES`] nor in the OpenAPI description; the metrics label them as they do routes.
pub const PAGE_PATHS: &[&str] = &["/assets/{dir}/{file}"];

/// Registers every route, page and file, and the extractors' error handlers.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::QueryConfig::default().error_handler(query_error));
    register(cfg);
    assets::configure(cfg);
    cfg.default_service(web::to(not_found));
}

/// One resource per path, holding the routes of its methods; any other method on it
/// answers 405 with `Allow`. The API's paths are grouped in one scope per noun
/// (`/api/v1/reviews`, ..): actix tries the resources in turn, a pattern with a `{name}`
/// by a regex, and a scope's prefix by comparing it, so an approval tries the few
/// resources of its scope, not every one declared before it. A path matched by no
/// resource of its scope gets the App's 404, as before.
fn register(cfg: &mut web::ServiceConfig) {
    let resources = grouped(routes()).into_iter().map(|(path, routes)| {
        let (scope, rest) = scope_of(path);
        let resource = routes
            .into_iter()
            .fold(web::resource(rest), |r, route| r.route(route))
            .default_service(web::to(move || method_not_allowed(path)));
        (scope, resource)
    });
    for (scope, resources) in grouped(resources) {
        if scope.is_empty() {
            resources.into_iter().for_each(|r| {
                cfg.service(r);
            });
        } else {
            cfg.service(
                resources
                    .into_iter()
                    .fold(web::scope(scope), Scope::service),
            );
        }
    }
}

/// The scope of an API path, its first three segments (`/api/v1/reviews`), and the rest
/// of it (`/{id}/approve`, or empty); no scope ("") for a path outside `/api/v1/`.
fn scope_of(path: &'static str) -> (&'static str, &'static str) {
    let Some(noun) = path.strip_prefix("/api/v1/") else {
        return ("", path);
    };
    let end = "/api/v1/".len() + noun.find('/').unwrap_or(noun.len());
    path.split_at(end)
}

/// A page or file at `path` (one of [`PAGE_PATHS`]): GET and HEAD answered by `handler`,
/// any other method 405 with `Allow`, as on the API's routes.
fn page_resource<F, Args>(path: &'static str, handler: F) -> Resource
where
    F: Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    assert!(
        PAGE_PATHS.contains(&path),
        "{path} is missing from PAGE_PATHS"
    );
    web::resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(move || method_not_allowed(path)))
}

/// The methods served on `path` (a pattern of [`ROUTES`], HEAD wherever GET is, or of
/// [`PAGE_PATHS`]), as an `Allow` header value.
pub fn allowed_methods(path: &str) -> String {
    if PAGE_PATHS.contains(&path) {
        return "GET, HEAD".to_string();
    }
    let mut methods = Vec::new();
    for (m, _) in ROUTES.iter().filter(|(_, p)| *p == path) {
        methods.push(m.to_ascii_uppercase());
        if *m == "get" {
            methods.push("HEAD".to_string());
        }
    }
    methods.join(", ")
}

pub(crate) async fn method_not_allowed(path: &'static str) -> HttpResponse {
    error::method_not_allowed(&allowed_methods(path))
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.path()
    )))
}

fn path_error(_err: PathError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::not_found("no such document or review").into()
}

fn query_error(err: QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::validation(format!("invalid query parameters: {err}")).into()
}
