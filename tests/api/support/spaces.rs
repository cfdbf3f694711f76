//! Spaces in tests: spaces and memberships written straight into the test's database (a
//! membership holds from the caller's next request: nothing caches it), tokens that carry
//! no roles of their own (members by their memberships alone) or groups, and documents
//! created and submitted in a space through the API.

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use super::app::TestApp;

impl TestApp {
    /// Creates the space `key` (named after it), with no members.
    pub async fn space(&self, key: &str) {
        sqlx::query("INSERT INTO spaces (key, name) VALUES ($1, $1)")
            .bind(key)
            .execute(&self.pg)
            .await
            .unwrap();
    }

    /// Gives `subject` (`user:<sub>` or `group:<name>`) `roles` in `space`, replacing the
    /// roles it held there.
    pub async fn grant(&self, space: &str, subject: &str, roles: &[&str]) {
        sqlx::query(
            "INSERT INTO space_members (space_id, subject, roles) VALUES ($1, $2, $3) \
             ON CONFLICT (space_id, subject) \
             DO UPDATE SET roles = EXCLUDED.roles, updated_at = now()",
        )
        .bind(space)
        .bind(subject)
        .bind(roles)
        .execute(&self.pg)
        .await
        .unwrap();
    }

    /// Removes `subject`'s membership of `space` (it must have one).
    pub async fn revoke(&self, space: &str, subject: &str) {
        let done = sqlx::query("DELETE FROM space_members WHERE space_id = $1 AND subject = $2")
            .bind(space)
            .bind(subject)
            .execute(&self.pg)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1, "{subject} was a member of {space}");
    }

    /// A token of `sub` with no roles of its own: what it may do, it may by its memberships.
    pub fn member(&self, sub: &str) -> String {
        self.token(sub, &[])
    }

    /// A token of `sub` with no roles of its own, in `groups` (the groups claim).
    pub fn member_in(&self, sub: &str, groups: &[&str]) -> String {
        self.token_in(sub, &[], groups)
    }

    /// `POST /api/v1/documents` in `space` as `token`.
    pub async fn create_in(&self, space: &str, token: &str, title: &str) -> Response {
        let body = json!({"title": title, "body": "Text of a space.", "space": space});
        self.post("/api/v1/documents", token, body).await
    }

    /// A document `title` created in `space` by `token` (201): its id.
    pub async fn document_in(&self, space: &str, token: &str, title: &str) -> String {
        let r = self.create_in(space, token, title).await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["space"], space);
        doc["id"].as_str().unwrap().to_string()
    }

    /// Submits `id` as `token` (201): the new review's id.
    pub async fn submit_as(&self, id: &str, token: &str) -> String {
        let path = format!("/api/v1/documents/{id}/submit");
        let r = self.post(&path, token, json!({})).await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{}",
            r.text().await.unwrap()
        );
        let v: Value = r.json().await.unwrap();
        v["review"]["id"].as_str().unwrap().to_string()
    }

    /// A document `title` created in `space` by `token` and submitted: (document, review).
    pub async fn pending_in(&self, space: &str, token: &str, title: &str) -> (String, String) {
        let id = self.document_in(space, token, title).await;
        let review = self.submit_as(&id, token).await;
        (id, review)
    }
}
