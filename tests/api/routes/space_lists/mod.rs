//! The lists per space: a space's documents as each of its members may read them, the title
//! search, an author's own documents in the spaces where it still has a role, and the review
//! queue of a reviewer's spaces. Spaces and memberships are written by SQL here (the routes
//! that manage them are tested on their own).

mod documents;
mod queue;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::TestApp;

/// Creates the space `key` with `members`: (subject, roles).
async fn space(app: &TestApp, key: &str, members: &[(&str, &[&str])]) {
    sqlx::query("INSERT INTO spaces (key, name) VALUES ($1, $1)")
        .bind(key)
        .execute(&app.pg)
        .await
        .unwrap();
    for (subject, roles) in members {
        let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
        sqlx::query("INSERT INTO space_members (space_id, subject, roles) VALUES ($1, $2, $3)")
            .bind(key)
            .bind(subject)
            .bind(roles)
            .execute(&app.pg)
            .await
            .unwrap();
    }
}

/// A token of `sub` with no roles of its own: what it may do is its memberships.
fn member(app: &TestApp, sub: &str) -> String {
    app.token(sub, &[])
}

/// Creates a draft titled `title` in `space` as `token`; returns its id.
async fn create(app: &TestApp, token: &str, space: &str, title: &str) -> String {
    let body = json!({"title": title, "body": "text", "space": space});
    let r = app.post("/api/v1/documents", token, body).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["space"], space);
    v["id"].as_str().unwrap().to_string()
}

/// Creates and submits a document; returns (document id, review id).
async fn submitted(app: &TestApp, token: &str, space: &str, title: &str) -> (String, String) {
    let id = create(app, token, space, title).await;
    let r = app
        .post(&format!("/api/v1/documents/{id}/submit"), token, json!({}))
        .await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    (id, v["review"]["id"].as_str().unwrap().to_string())
}

/// A page of a list: the `field` of each item, and the next cursor.
async fn page(
    app: &TestApp,
    path: &str,
    token: &str,
    field: &str,
) -> (Vec<String>, Option<String>) {
    let r = app.get(path, token).await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "{path}: {}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    let items = v["items"].as_array().unwrap();
    let values = items.iter().map(|d| d[field].as_str().unwrap().to_string());
    (
        values.collect(),
        v["next_cursor"].as_str().map(str::to_string),
    )
}

/// The titles of a documents list (one page).
async fn titles(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    page(app, path, token, "title").await.0
}

/// Every item's `field`, the list walked `limit=1` at a time from `path` (which has a `?`).
async fn walked(app: &TestApp, path: &str, token: &str, field: &str) -> Vec<String> {
    let (mut all, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let after = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
        let (items, next) = page(app, &format!("{path}&limit=1{after}"), token, field).await;
        assert!(items.len() <= 1);
        all.extend(items);
        match next {
            Some(c) => cursor = Some(c),
            None => return all,
        }
    }
}

/// `s` as a query string's value: every byte but letters and digits percent-encoded.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}
