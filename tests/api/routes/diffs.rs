//! `GET /documents/{id}/diff`: what a revision changes, as JSON hunks with word-level marks
//! or as a unified diff, between the versions a document holds.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

const V1: &str = "Intro\nRestart the indexer.\nCheck the queue.\nEnd";

impl TestApp {
    async fn diff_of(&self, id: &str, query: &str, accept: &str) -> reqwest::Response {
        let url = self.url(&format!("/api/v1/documents/{id}/diff{query}"));
        let req = self.client.get(url).header("Accept", accept);
        req.bearer_auth(self.reviewer()).send().await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_shows_what_it_changes_in_json_and_as_a_unified_diff() {
    let app = spawn_app().await;
    let (id, _) = app.approved_document("Runbook", V1).await;
    let r = app
        .client
        .put(app.url(&format!("/api/v1/documents/{id}")))
        .bearer_auth(app.author())
        .json(&json!({"title": "Runbook v2", "body": V1.replace("the indexer", "both indexers")}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    json_hunks_mark_the_changed_words(&app, &id).await;
    unified_diff_when_asked_first(&app, &id).await;
    by_version_number_either_way_round(&app, &id).await;
    app.finish().await;
}

/// Published (3) against working (4): one hunk, the replaced line's changed words marked.
async fn json_hunks_mark_the_changed_words(app: &TestApp, id: &str) {
    let r = app.diff_of(id, "", "application/json").await;
    assert_eq!(r.status(), StatusCode::OK);
    let d: Value = r.json().await.unwrap();
    assert_eq!(
        (d["from"].as_i64(), d["to"].as_i64()),
        (Some(3), Some(4)),
        "{d}"
    );
    assert_eq!(d["title"], json!({"from": "Runbook", "to": "Runbook v2"}));
    assert_eq!(
        (d["removed"].as_i64(), d["added"].as_i64()),
        (Some(1), Some(1))
    );
    let hunk = &d["hunks"][0];
    assert_eq!(
        [
            &hunk["from_line"],
            &hunk["from_count"],
            &hunk["to_line"],
            &hunk["to_count"]
        ],
        [&json!(1), &json!(4), &json!(1), &json!(4)]
    );
    let ops: Vec<(&str, &str)> = hunk["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["op"].as_str().unwrap(), l["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops,
        [
            ("equal", "Intro"),
            ("delete", "Restart the indexer."),
            ("insert", "Restart both indexers."),
            ("equal", "Check the queue."),
            ("equal", "End"),
        ]
    );
    let marked: Vec<&str> = hunk["lines"][2]["words"]
        .as_array()
        .expect("the replaced line's words")
        .iter()
        .filter(|w| w["changed"] == true)
        .map(|w| w["text"].as_str().unwrap())
        .collect();
    assert!(marked.concat().contains("both"), "{marked:?}");
}

/// The same change as a unified diff, asked first in Accept.
async fn unified_diff_when_asked_first(app: &TestApp, id: &str) {
    let r = app
        .diff_of(id, "", "text/x-diff, application/json;q=0.5")
        .await;
    let kind = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("text/x-diff"), "{kind}");
    let text = r.text().await.unwrap();
    assert!(
        text.starts_with("--- v3\tRunbook\n+++ v4\tRunbook v2\n@@ -1,4 +1,4 @@\n"),
        "{text}"
    );
    assert!(
        text.contains("\n-Restart the indexer.\n+Restart both indexers.\n"),
        "{text}"
    );
}

/// Either way round, by version number; a version not held is 404, a bad one 422.
async fn by_version_number_either_way_round(app: &TestApp, id: &str) {
    let d: Value = app
        .diff_of(id, "?from=4&to=published", "*/*")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!((d["from"].as_i64(), d["to"].as_i64()), (Some(4), Some(3)));
    assert_eq!(d["hunks"][0]["lines"][1]["text"], "Restart both indexers.");
    let r = app.diff_of(id, "?from=2", "application/json").await;
    let e = expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("published version 3 and its working version 4"),
        "{e}"
    );
    for bad in ["?from=latest", "?to=0", "?to=03", "?to="] {
        let r = app.diff_of(id, bad, "application/json").await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_the_first_approval_everything_is_new_and_a_private_draft_stays_hidden() {
    let app = spawn_app().await;
    let draft = app.create_document("Runbook", V1).await.id.to_string();
    let r = app.diff_of(&draft, "", "application/json").await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let _ = app.submitted(&draft).await;
    let d: Value = app
        .diff_of(&draft, "", "application/json")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (d["from"].clone(), d["to"].as_i64()),
        (Value::Null, Some(2))
    );
    assert_eq!(d["title"], json!({"from": null, "to": "Runbook"}));
    assert_eq!(
        (d["removed"].as_i64(), d["added"].as_i64()),
        (Some(0), Some(4))
    );
    let h = &d["hunks"][0];
    assert_eq!([&h["from_line"], &h["from_count"]], [&json!(0), &json!(0)]);
    app.finish().await;
}
