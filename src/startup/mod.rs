//! Wiring: the only module that sees every layer. `CoreBuilder` builds the stores, the
//! lock gate, the dispatcher and the services from `Settings`; `Application` binds the
//! listener (port 0 in tests) and serves until stopped.

mod builder;
mod middleware;

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use opentelemetry_instrumentation_actix_web::RequestTracing;

use crate::config::Settings;
use crate::shutdown::{Deadline, ShutdownSettings};
use crate::tasks::Supervisor;
use crate::web::auth::{Jwks, JwtVerifier};
pub use builder::{Core, CoreBuilder};

pub struct Application {
    port: u16,
    server: Server,
    core: Core,
    shutdown: ShutdownSettings,
}

impl Application {
    /// Binds `server.host:server.port` (0 picks a free port) and wires everything.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let core = CoreBuilder::new(&settings).build().await?;
        let server = &settings.server;
        let listener = TcpListener::bind((server.host.as_str(), server.port))
            .with_context(|| format!("could not bind {}:{}", server.host, server.port))?;
        let port = listener.local_addr()?.port();
        let state = core.state.clone();
        let jwks = Jwks::from_settings(&settings.auth)?;
        if let Some(jwks) = &jwks {
            // Start-up does not depend on the identity provider: without its keys, its
            // tokens are refused (401) until a later fetch brings them.
            if !jwks.load().await {
                tracing::warn!(
                    "JWKS unreachable at start-up: its tokens are refused until its keys arrive"
                );
            }
            jwks.spawn_refresher(core.shutdown.clone());
        }
        let verifier = web::Data::new(JwtVerifier::from_settings(&settings.auth, jwks)?);
        let spaces = web::Data::from(state.spaces.clone());
        let http = HttpServer::new(move || {
            App::new()
                .wrap(from_fn(middleware::middleware))
                // Outermost: the request's server span, continuing its `traceparent`.
                .wrap(RequestTracing::new())
                .app_data(state.clone())
                .app_data(verifier.clone())
                .app_data(spaces.clone())
                .configure(crate::http::configure)
                .configure(crate::console::configure)
        })
        .shutdown_timeout(settings.shutdown.in_flight().as_secs())
        .client_request_timeout(server.client_request_timeout)
        .keep_alive(server.keep_alive)
        .client_disconnect_timeout(server.client_disconnect_timeout)
        .disable_signals()
        .workers(server.workers())
        .listen(listener)?
        .run();
        if settings.outbox.run_dispatcher {
            core.spawn_dispatcher();
        }
        Ok(Self {
            port,
            server: http,
            core,
            shutdown: settings.shutdown.clone(),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// The supervisor of the background tasks (their restarts, the test hook that makes
    /// one panic, whether they have all ended).
    pub fn tasks(&self) -> Arc<Supervisor> {
        self.core.tasks.clone()
    }

    /// Serves until the server is stopped (via [`Application::handle`]), then stops the
    /// background tasks (the dispatcher after its batch), joins them, and closes the pools.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let grace = self.shutdown.grace;
        let result = self.server.await;
        self.core.close(Deadline::after(grace)).await;
        result.context("http server failed")
    }

    /// Serves until `signal` resolves, then goes away as `shutdown` describes: `/readyz`
    /// 503 `draining` at once while requests are still served for `shutdown.drain_secs`,
    /// then the listener closed and the requests in flight finished, then the background
    /// tasks, the marks and the pools; all within `shutdown.grace_secs` of the signal.
    pub async fn run_until(
        self,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Self {
            server,
            core,
            shutdown,
            ..
        } = self;
        let handle = server.handle();
        let state = core.state.clone();
        let (signalled, deadline) = tokio::sync::oneshot::channel();
        let stopper = tokio::spawn(async move {
            signal.await;
            let _ = signalled.send(Deadline::after(shutdown.grace));
            state.probes.start_draining();
            tracing::info!(
                drain_secs = shutdown.drain.as_secs(),
                grace_secs = shutdown.grace.as_secs(),
                "shutdown signal received: draining (readyz 503, requests still served)"
            );
            tokio::time::sleep(shutdown.drain).await;
            tracing::info!("drain over: listener closed, finishing the requests in flight");
            handle.stop(true).await;
        });
        let result = server.await;
        stopper.abort();
        let deadline = deadline
            .await
            .unwrap_or_else(|_| Deadline::after(shutdown.grace));
        core.close(deadline).await;
        result.context("http server failed")
    }
}
