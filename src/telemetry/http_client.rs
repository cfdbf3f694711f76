//! The OTLP exporter's HTTP client: the service's own reqwest client (no second HTTP
//! stack). The SDK's batch processor exports from a thread of its own, outside the async
//! runtime, so each request runs as a task on the runtime that installed telemetry and the
//! exporter thread waits for its result.

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

#[derive(Debug)]
pub(super) struct RuntimeClient {
    client: reqwest::Client,
    runtime: Handle,
}

impl RuntimeClient {
    /// A client whose requests give up after `timeout`, run on `runtime`.
    pub(super) fn new(timeout: std::time::Duration, runtime: Handle) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let client = self.client.clone();
        // Built and sent inside the task: reqwest needs the runtime's timers and reactor
        // from the first call, which the exporter's thread does not have.
        let (status, headers, body) = self
            .runtime
            .spawn(async move {
                let response = client
                    .request(parts.method, parts.uri.to_string())
                    .headers(parts.headers)
                    .body(body)
                    .send()
                    .await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await??;
        let mut response = Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
