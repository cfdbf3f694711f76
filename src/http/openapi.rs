//! The OpenAPI 3 description, generated from the handlers' annotations, served at
//! `/openapi.json` and `/api/v1/openapi.json`, and browsable at `/docs`. Its operations and
//! their schemas come from the `routes!` table (`super::Described`); this file adds what
//! belongs to the whole description: its info, tags, the bearer scheme and corrections.

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{Modify, OpenApi};

use crate::web::csp::html_page;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "kh-review",
        description = "Document-review workflow of the knowledge base. Every error body is \
                       an ErrorEnvelope with a stable `code`. Events: see docs/events.md."
    ),
    modifiers(&Routes, &BearerAuth, &UpdateNeedsAField),
    tags(
        (name = "documents", description = "Authors' documents"),
        (name = "reviews", description = "Reviewers' votes and claims"),
        (name = "policies", description = "Review policies: stages, approvals, groups, due dates"),
        (name = "spaces", description = "Spaces (knowledge bases) and their memberships"),
        (name = "webhooks", description = "A space's Standard Webhooks endpoints, their secrets and delivery logs (docs/webhooks.md)"),
        (name = "admin", description = "Parked outbox rows: list, retry, skip; replays of the events to one queue; the audit chain's check"),
        (name = "operations", description = "Health, metrics, this description")
    )
)]
pub struct ApiDoc;

/// The operations of the `routes!` table, with the schemas they reference.
struct Routes;

impl Modify for Routes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi.merge(super::Described::openapi());
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "HS256 JWT with claims sub, roles (author, reviewer, admin), exp; nbf checked \
                         when present, iss and aud when the service is configured with them",
                    ))
                    .build(),
            ),
        );
    }
}

/// An edit gives at least one field: `minProperties: 1` on UpdateDocument and UpdateSpace.
/// Set here because utoipa-gen 5.5's `#[schema(min_properties = 1)]` writes
/// `maxProperties: 1` instead, which refuses the edit of both fields.
struct UpdateNeedsAField;

impl Modify for UpdateNeedsAField {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(schemas) = openapi.components.as_mut().map(|c| &mut c.schemas) else {
            return;
        };
        for name in ["UpdateDocument", "UpdateSpace"] {
            if let Some(RefOr::T(Schema::Object(o))) = schemas.get_mut(name) {
                o.min_properties = Some(1);
            }
        }
    }
}

/// The OpenAPI document as JSON.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    summary = "This OpenAPI description (also at /api/v1/openapi.json)",
    responses((status = 200, description = "OpenAPI 3 JSON"))
)]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

/// Browsable API docs: RapiDoc, vendored and served by the service itself (`/assets/...`),
/// so the page works on a closed network, under the pages' Content-Security-Policy.
#[utoipa::path(
    get,
    path = "/docs",
    tag = "operations",
    summary = "Browsable API documentation",
    description = "An HTML page (RapiDoc) rendering /openapi.json. Everything it loads comes \
                   from this service (the script from /assets/); its Content-Security-Policy \
                   allows no other origin.",
    responses((status = 200, description = "HTML page", content_type = "text/html"))
)]
pub async fn docs() -> HttpResponse {
    html_page(DOCS_PAGE)
}

/// No inline script: the CSP would refuse it.
const DOCS_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>kh-review API</title>
  <script type="module" src="/assets/rapidoc-9.3.8/rapidoc-min.js"></script>
</head>
<body>
  <rapi-doc spec-url="/openapi.json" render-style="read" show-header="false"
            allow-authentication="true" theme="light" load-fonts="false"></rapi-doc>
  <noscript>The API description is at <a href="/openapi.json">/openapi.json</a>.</noscript>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the annotations agree: each route's method and path is an operation
    /// (`/api/v1/openapi.json` is the same document at a second address), and nothing else.
    #[test]
    fn every_route_is_described_and_only_those() {
        let spec = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut described = std::collections::BTreeSet::new();
        for (path, item) in spec["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                described.insert((method.clone(), path.clone()));
            }
        }
        let routes = super::super::ROUTES
            .iter()
            .filter(|(_, p)| *p != "/api/v1/openapi.json")
            .map(|(m, p)| (m.to_string(), p.to_string()))
            .collect();
        assert_eq!(described, routes);
    }

    #[test]
    fn an_edit_needs_one_field_and_may_give_both() {
        let spec = serde_json::to_value(ApiDoc::openapi()).unwrap();
        for name in ["UpdateDocument", "UpdateSpace"] {
            let update = &spec["components"]["schemas"][name];
            assert_eq!(update["minProperties"], 1, "{update}");
            assert!(update.get("maxProperties").is_none(), "{update}");
        }
    }

    /// A header is there or not; utoipa describes an optional one as nullable unless told.
    #[test]
    fn header_parameters_are_strings_never_null() {
        let spec = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut headers = 0;
        for item in spec["paths"].as_object().unwrap().values() {
            for op in item.as_object().unwrap().values() {
                let params = op["parameters"].as_array().cloned().unwrap_or_default();
                for p in params.iter().filter(|p| p["in"] == "header") {
                    assert_eq!(p["schema"]["type"], "string", "{p}");
                    headers += 1;
                }
            }
        }
        assert!(headers >= 4, "the Idempotency-Key of every POST");
    }
}
