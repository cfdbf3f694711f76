//! What every handler can reach: the services of the layer below, the HTTP metrics, and
//! the few HTTP settings handlers need. Built by `startup::CoreBuilder`, as part of the `Core`.

use actix_web::HttpRequest;

use super::auth::Caller;
use super::body::BodyLimits;
use super::error::ApiError;
use super::event_docs::EventDocs;
use super::metrics::HttpMetrics;
use super::request_id;
use super::test_hooks;
use crate::usecases::{
    AuditService, Context, DocumentService, Idempotency, LeaseService, OutboxAdmin, PolicyService,
    Probes, ReplayService, ReviewService, SpaceService, TestHooks, WebhookService,
};

pub struct AppState {
    pub documents: DocumentService,
    /// Edit leases: who is editing a document.
    pub leases: LeaseService,
    pub reviews: ReviewService,
    pub policies: PolicyService,
    pub idempotency: Idempotency,
    pub probes: Probes,
    pub outbox_admin: OutboxAdmin,
    pub replays: ReplayService,
    pub audit: AuditService,
    /// The spaces, their members, and each caller's access.
    pub spaces: std::sync::Arc<SpaceService>,
    /// The spaces' webhook endpoints and their delivery logs.
    pub webhooks: std::sync::Arc<WebhookService>,
    pub metrics: HttpMetrics,
    /// How request bodies are read: their largest size, and how long they may take.
    pub body: BodyLimits,
    /// Refuse a write of a document without `If-Match` (`http.require_if_match`).
    pub require_if_match: bool,
    /// Honour the test-hook headers (`server.test_hooks`).
    pub test_hooks: bool,
    /// The runtime the clients of every store were built on. The work of a request runs
    /// there, next to the tasks that drive its Redis, MongoDB and pool connections, rather
    /// than on the HTTP worker thread: each store call then wakes a task on the same
    /// scheduler instead of handing over to another thread and back.
    pub runtime: tokio::runtime::Handle,
    /// `/asyncapi.json` and the event schemas, made at start-up.
    pub events: EventDocs,
}

impl AppState {
    /// Test hooks of this request; always off unless `server.test_hooks` is on.
    pub fn hooks(&self, req: &HttpRequest) -> TestHooks {
        if !self.test_hooks {
            return TestHooks::default();
        }
        test_hooks::from_request(req)
    }

    /// The context of a use case run for `caller` by this request (holding no idempotency
    /// key yet).
    pub fn context(&self, req: &HttpRequest, caller: &Caller) -> Context {
        Context {
            actor: caller.id.clone(),
            access: caller.access.clone(),
            groups: caller.groups.clone(),
            request_id: request_id::current(),
            hooks: self.hooks(req),
            held_key: None,
            if_match: None,
            lease_token: None,
        }
    }

    /// The context of a conditional write of a document (edit, submit, withdraw, archive):
    /// with the request's `If-Match`; 428 without one when `http.require_if_match` is on, 400
    /// for one that is not entity tags.
    pub fn conditional_context(
        &self,
        req: &HttpRequest,
        caller: &Caller,
    ) -> Result<Context, ApiError> {
        let if_match = super::preconditions::if_match(req, self.require_if_match)?;
        Ok(Context {
            if_match,
            ..self.context(req, caller)
        })
    }
}
