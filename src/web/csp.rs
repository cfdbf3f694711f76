//! The headers of every HTML page the service serves (`/docs`, and the console's): a
//! Content-Security-Policy that lets a page load, run and connect to nothing but the
//! service's own origin, and no content sniffing. A page must never need an inline script.

use actix_web::body::MessageBody;
use actix_web::http::header;
use actix_web::HttpResponse;

/// The `Content-Security-Policy` of every page: everything from the service's own origin
/// only. Two exceptions, both for styles, both found by loading `/docs` in headless Chromium
/// (tests/api/ui_docs.rs fails on any refusal), neither naming another origin:
/// - the `sha256-` source: the one `<style>` element RapiDoc 9.3.8 writes into its shadow
///   root, its theme (CSS variables; without them the page is unstyled). A hash, not
///   `'unsafe-inline'`, so no other inline `<style>` applies; another RapiDoc version or
///   other theme attributes on `<rapi-doc>` change it, and the test then names the new hash;
/// - `style-src-attr 'unsafe-inline'`: RapiDoc's templates set some 240 `style` attributes
///   (widths, display toggles), which no hash can allow. Attributes only: they cannot load
///   anything, as every fetching directive stays `'self'`.
///
/// - `img-src 'self' data:`: RapiDoc draws the arrow of its `<select>`s (the operations
///   with a nullable request body or field bring one) as an inline `data:` SVG in its
///   script. A `data:` image is in the page already: it fetches nothing from anywhere.
///
/// RapiDoc's own web fonts, on a font host, are switched off in the page
/// (`load-fonts="false"`); `font-src 'self'` would refuse them anyway.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'sha256-NolJvpLT1T5e8QBkz4jdiH1sL721JFKC74rleMr1A7w='; \
     style-src-attr 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; \
     form-action 'self'";

/// The console's policy: the service's own origin only, without exceptions. Its templates
/// use no `style` attribute, no inline `<style>` and no inline script, and its htmx-config
/// (a `<meta>`) switches off the indicator styles htmx would otherwise insert.
pub const CONSOLE_CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// An HTML page with the page headers: [`CONTENT_SECURITY_POLICY`] and `nosniff`.
pub fn html_page(body: impl MessageBody + 'static) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body)
}
