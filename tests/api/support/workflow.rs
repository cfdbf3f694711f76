//! Review policies in tests: tokens with groups, policies written through the admin API,
//! documents submitted under a policy, and votes and claims by named reviewers.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kh_review::web::auth::Role;
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use super::app::{expose, TestApp};

impl TestApp {
    /// A token of `sub` with `roles` and the `groups` claim.
    pub fn token_in(&self, sub: &str, roles: &[Role], groups: &[&str]) -> String {
        let now = chrono::Utc::now().timestamp();
        let claims = json!({
            "sub": sub, "roles": roles, "groups": groups, "exp": now + 600, "iat": now,
        });
        let key = EncodingKey::from_secret(expose(&self.settings.auth.jwt_secret).as_bytes())
            .expect("a secret");
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
    }

    /// A reviewer `sub` in `groups`.
    pub fn reviewer_in(&self, sub: &str, groups: &[&str]) -> String {
        self.token_in(sub, &[Role::Reviewer], groups)
    }

    pub fn admin(&self) -> String {
        self.token("root", &[Role::Admin])
    }

    pub async fn put(&self, path: &str, token: &str, body: Value) -> Response {
        let r = self
            .client
            .put(self.url(path))
            .bearer_auth(token)
            .json(&body);
        r.send().await.expect("request sent")
    }

    pub async fn patch(&self, path: &str, token: &str, body: Value) -> Response {
        let r = self
            .client
            .patch(self.url(path))
            .bearer_auth(token)
            .json(&body);
        r.send().await.expect("request sent")
    }

    pub async fn delete(&self, path: &str, token: &str) -> Response {
        let r = self.client.delete(self.url(path)).bearer_auth(token);
        r.send().await.expect("request sent")
    }

    /// Writes policy `name` (as an admin); returns it as the service answered.
    pub async fn policy(&self, name: &str, body: Value) -> Value {
        let r = self
            .put(
                &format!("/api/v1/admin/policies/{name}"),
                &self.admin(),
                body,
            )
            .await;
        assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
        r.json().await.unwrap()
    }

    /// A policy of one stage needing `n` approvals from anyone.
    pub async fn n_of_m(&self, name: &str, n: u8) -> Value {
        let stages = json!([{"name": "review", "required_approvals": n}]);
        self.policy(name, json!({ "stages": stages })).await
    }

    /// A policy of one stage of one approval from anyone, due `secs` after each submit.
    pub async fn due_after(&self, name: &str, secs: u64) -> Value {
        let stages = json!([{"name": "review", "required_approvals": 1}]);
        let body = json!({ "stages": stages, "due_after_secs": secs });
        self.policy(name, body).await
    }

    /// A policy of two stages: `n` approvals from anyone (`review`), then one from the
    /// legal group (`legal`).
    pub async fn then_legal(&self, name: &str, n: u8) -> Value {
        let stages = json!([
            {"name": "review", "required_approvals": n},
            {"name": "legal", "required_approvals": 1, "eligible_groups": ["legal"]}
        ]);
        self.policy(name, json!({ "stages": stages })).await
    }

    /// Creates a document under `policy` and submits it: (document_id, review_id).
    pub async fn pending_under(&self, policy: &str) -> (String, String) {
        let r = self
            .post(
                "/api/v1/documents",
                &self.author(),
                json!({"title": "Runbook", "body": "Restart the indexer.", "policy": policy}),
            )
            .await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        let doc: Value = r.json().await.unwrap();
        let id = doc["id"].as_str().unwrap().to_string();
        let review_id = self.submitted(&id).await;
        (id, review_id)
    }

    pub async fn claim(&self, review_id: &str, token: &str) -> Response {
        self.post(
            &format!("/api/v1/reviews/{review_id}/claim"),
            token,
            json!({}),
        )
        .await
    }

    pub async fn withdraw(&self, document_id: &str) -> Response {
        let path = format!("/api/v1/documents/{document_id}/withdraw");
        self.post(&path, &self.author(), json!({})).await
    }

    /// Outbox rows of `event_type` for `review_id`.
    pub async fn events_of(&self, review_id: &str, event_type: &str) -> i64 {
        self.count(&format!(
            "SELECT count(*) FROM outbox WHERE payload->>'review_id' = '{review_id}' \
             AND event_type = '{event_type}'"
        ))
        .await
    }
}
