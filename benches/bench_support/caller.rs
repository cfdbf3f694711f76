//! A client of one service instance as one user (an author, a reviewer, an admin), for the
//! rows that drive the service's HTTP API beyond approvals: the review workflow's, the
//! queue's and the overdue sweep's, the document lifecycle's and the replay's.

use kh_review::web::auth::{sign, Role};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{BenchEnv, Service};

/// A client of one service instance as one user.
#[derive(Clone)]
pub struct Caller {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Caller {
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<reqwest::StatusCode> {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?;
        let status = r.status();
        r.bytes().await?;
        Ok(status)
    }

    /// GETs `path`; its status and, when 200, its body.
    pub async fn get(&self, path: &str) -> anyhow::Result<(reqwest::StatusCode, Value)> {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let status = r.status();
        Ok((status, r.json().await.unwrap_or_default()))
    }

    /// Sends `body` to `path` with `method`; its status and JSON body (null when none).
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<(reqwest::StatusCode, Value)> {
        let r = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?;
        let status = r.status();
        Ok((status, r.json().await.unwrap_or_default()))
    }

    /// As [`Caller::send`], with `headers` besides the token.
    pub async fn send_with(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
        headers: &[(&str, String)],
    ) -> anyhow::Result<(reqwest::StatusCode, Value)> {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let r = req.bearer_auth(&self.token).json(body).send().await?;
        let status = r.status();
        Ok((status, r.json().await.unwrap_or_default()))
    }

    pub async fn approve(&self, review: Uuid) -> anyhow::Result<bool> {
        let path = format!("/api/v1/reviews/{review}/approve");
        Ok(self.post(&path, &json!({})).await? == reqwest::StatusCode::OK)
    }

    pub async fn claim(&self, review: Uuid) -> anyhow::Result<bool> {
        let path = format!("/api/v1/reviews/{review}/claim");
        Ok(self.post(&path, &json!({})).await? == reqwest::StatusCode::OK)
    }

    /// Writes the policy `name` (PUT, as an admin); returns its new version.
    pub async fn put_policy(&self, name: &str, body: &Value) -> anyhow::Result<i32> {
        let path = format!("/api/v1/admin/policies/{name}");
        let (status, body) = self.send(reqwest::Method::PUT, &path, body).await?;
        anyhow::ensure!(status.is_success(), "PUT policy {name}: {status} {body}");
        let version = body["version"].as_i64();
        version
            .map(|v| v as i32)
            .ok_or_else(|| anyhow::anyhow!("PUT policy {name}: no version in {body}"))
    }
}

impl BenchEnv {
    /// A caller of `svc` as `sub` with `role`.
    pub fn caller(&self, svc: &Service, sub: &str, role: Role) -> Caller {
        Caller {
            client: self.http.clone(),
            base: svc.base.clone(),
            token: sign(&self.settings.auth.jwt_secret, sub, &[role], 3600),
        }
    }
}
