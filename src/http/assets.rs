//! The vendored front-end files (`assets/vendor/`, whose README names each package, version
//! and licence), compiled into the binary and served at `/assets/{dir}/{file}`, so the
//! pages work on a closed network. Serves only the files listed here, never a path read
//! from the request, and is no part of the JSON API (nor of its OpenAPI description).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::web::error::ApiError;

/// The route pattern, also in [`super::PAGE_PATHS`] (its metrics label, its 405).
pub const PATH: &str = "/assets/{dir}/{file}";

/// The folder of each file carries its version, so a cached copy is never stale.
const CACHE_FOR_EVER: &str = "public, max-age=31536000, immutable";
const JAVASCRIPT: &str = "text/javascript; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// One vendored file: its folder and name under `assets/vendor/`, and its media type.
struct Asset {
    dir: &'static str,
    file: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($dir:literal, $file:literal, $content_type:expr) => {
        Asset {
            dir: $dir,
            file: $file,
            content_type: $content_type,
            bytes: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/vendor/",
                $dir,
                "/",
                $file
            )),
        }
    };
}

const ASSETS: &[Asset] = &[
    asset!("htmx.org-2.0.11", "htmx.min.js", JAVASCRIPT),
    asset!("htmx.org-2.0.11", "LICENSE", TEXT),
    asset!("rapidoc-9.3.8", "rapidoc-min.js", JAVASCRIPT),
    asset!("rapidoc-9.3.8", "rapidoc-min.js.LICENSE.txt", TEXT),
    asset!("rapidoc-9.3.8", "LICENSE.txt", TEXT),
    asset!("uplot-1.6.32", "uPlot.iife.min.js", JAVASCRIPT),
    asset!("uplot-1.6.32", "uPlot.min.css", CSS),
    asset!("uplot-1.6.32", "LICENSE", TEXT),
];

/// Registers [`PATH`]: GET and HEAD, any other method 405.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(super::page_resource(PATH, serve));
}

/// One vendored file, or 404 for any name not listed in [`ASSETS`].
async fn serve(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let info = req.match_info();
    let (dir, file) = (info.get("dir"), info.get("file"));
    let asset = ASSETS
        .iter()
        .find(|a| Some(a.dir) == dir && Some(a.file) == file)
        .ok_or_else(|| ApiError::not_found(format!("no asset {}", req.path())))?;
    Ok(HttpResponse::Ok()
        .content_type(asset.content_type)
        .insert_header((header::CACHE_CONTROL, CACHE_FOR_EVER))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .body(asset.bytes))
}
