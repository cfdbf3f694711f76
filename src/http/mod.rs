//! HTTP layer: routes, extractors, the error envelope, views. Handlers parse input, check
//! roles and call the services of `review`; they hold no SQL, no locking and no rules.
//! Nothing below this layer imports it.

pub mod auth;
mod body;
mod documents;
pub mod error;
mod fields;
mod health;
pub mod metrics;
pub mod middleware;
mod openapi;
mod post;
pub mod request_id;
mod reviews;
mod settings;
mod state;
pub mod views;

pub use settings::{AuthSettings, ServerSettings};
pub use state::AppState;

use actix_web::error::{PathError, QueryPayloadError};
use actix_web::{web, HttpRequest, HttpResponse};

use error::ApiError;

/// Declares the routes once: registers them and lists them (the OpenAPI test compares the
/// list with the generated description, so neither can drift from the other).
macro_rules! routes {
    ($( $method:ident $path:literal => $handler:path ),* $(,)?) => {
        fn register(cfg: &mut web::ServiceConfig) {
            $( cfg.route($path, web::$method().to($handler)); )*
        }
        /// Every (method, path) the service serves.
        pub const ROUTES: &[(&str, &str)] = &[ $( (stringify!($method), $path) ),* ];
    };
}

routes! {
    get "/healthz" => health::healthz,
    get "/readyz" => health::readyz,
    get "/metrics" => health::metrics,
    get "/openapi.json" => openapi::openapi_json,
    get "/api/v1/openapi.json" => openapi::openapi_json,
    get "/docs" => openapi::docs,
    post "/api/v1/documents" => documents::create,
    get "/api/v1/documents/{id}" => documents::get,
    put "/api/v1/documents/{id}" => documents::update,
    post "/api/v1/documents/{id}/submit" => documents::submit,
    get "/api/v1/documents/{id}/reviews" => documents::history,
    get "/api/v1/reviews" => reviews::list,
    post "/api/v1/reviews/{id}/approve" => reviews::approve,
    post "/api/v1/reviews/{id}/reject" => reviews::reject,
}

/// Registers every route and the extractors' error handlers.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::QueryConfig::default().error_handler(query_error));
    register(cfg);
    cfg.default_service(web::to(not_found));
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
