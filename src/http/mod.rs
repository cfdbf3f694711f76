//! HTTP layer: routes, extractors, the error envelope. Handlers parse input, check roles and
//! call into `review/` or `store/`; they hold no SQL and no locking logic.

mod body;
pub mod documents;
pub mod error;
pub mod health;
pub mod idempotency;
pub mod request_id;
pub mod reviews;
mod views;

use actix_web::error::{PathError, QueryPayloadError};
use actix_web::{web, HttpRequest, HttpResponse};

use error::ApiError;

/// The largest accepted request body, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// Registers every route. `json_limit` bounds request bodies.
pub fn configure(cfg: &mut web::ServiceConfig, json_limit: usize) {
    cfg.app_data(web::Data::new(BodyLimit(json_limit)))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::QueryConfig::default().error_handler(query_error))
        .route("/healthz", web::get().to(health::healthz))
        .route("/readyz", web::get().to(health::readyz))
        .service(
            web::scope("/api/v1")
                .route("/documents", web::post().to(documents::create))
                .route("/documents/{id}", web::get().to(documents::get))
                .route("/documents/{id}", web::put().to(documents::update))
                .route("/documents/{id}/submit", web::post().to(documents::submit))
                .route("/documents/{id}/reviews", web::get().to(documents::history))
                .route("/reviews", web::get().to(reviews::list))
                .route("/reviews/{id}/approve", web::post().to(reviews::approve))
                .route("/reviews/{id}/reject", web::post().to(reviews::reject)),
        )
        .default_service(web::to(not_found));
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
