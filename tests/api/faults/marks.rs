//! The done marks of rows delivered by their requests are written in groups
//! (`outbox/marks.rs`). A transition right after another on the same document finds the
//! first one's row still waiting for its mark, so its own row is left to the dispatchers:
//! its request must write the waiting marks and deliver it itself.

use std::time::Duration;

use crate::support::app::{spawn_app_with, AppOptions};

#[tokio::test]
async fn transitions_back_to_back_are_each_delivered_by_their_request_while_a_mark_waits() {
    // No dispatcher: every event must go out from the request that committed it.
    let app = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    // Create, submit and approve at once, each well within the 20 ms window of the last
    // (document.created moves MongoDB only: no message).
    let (doc, _) = app.approved_review().await;
    app.outbox_drained(Duration::from_secs(5)).await;
    let types: Vec<String> = app
        .take_events()
        .await
        .into_iter()
        .filter(|(e, _)| e["document_id"].as_str() == Some(doc.as_str()))
        .map(|(e, _)| e["event_type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        types,
        ["document.submitted", "document.approved"],
        "each event once, in order"
    );
    app.finish().await;
}
