//! The purger removes the webhook deliveries made before the outbox's retention once they
//! are delivered or failed; a pending one, however old, and every recent one stay.

use std::time::Duration;

use crate::support::app::{spawn_app_with, AppOptions};
use crate::support::inspect::wait_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_deliveries_are_purged_and_pending_or_recent_ones_kept() {
    let app = spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.outbox.purge_interval = Duration::from_millis(200);
            s.outbox.purge_batch = 7;
        })),
        ..Default::default()
    })
    .await;
    let hook = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO webhooks (id, space_id, url, event_types, secret, created_by, enabled) \
         VALUES ($1, 'default', 'https://hooks.example.com/r', '{document.submitted}', \
                 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'root', false)",
    )
    .bind(hook)
    .execute(&app.pg)
    .await
    .unwrap();
    // (how many, state, made hours ago): 168 hours is the outbox's retention.
    for (n, state, hours) in [
        (50, "delivered", 200),
        (5, "failed", 200),
        (3, "pending", 200),
        (7, "delivered", 1),
    ] {
        sqlx::query(
            "INSERT INTO webhook_deliveries (webhook_id, space_id, event_id, event_type, payload, \
                                             state, created_at) \
             SELECT $1, 'default', gen_random_uuid(), 'document.submitted', '{}', $2, \
                    now() - make_interval(hours => $3) FROM generate_series(1, $4)",
        )
        .bind(hook)
        .bind(state)
        .bind(hours)
        .bind(n)
        .execute(&app.pg)
        .await
        .unwrap();
    }
    let left = "SELECT count(*) FROM webhook_deliveries";
    wait_for(
        "the old deliveries purged",
        Duration::from_secs(30),
        || async { (app.count(left).await == 10).then_some(()) },
    )
    .await;
    let kept = "SELECT count(*) FROM webhook_deliveries \
                WHERE state = 'pending' OR created_at > now() - interval '2 hours'";
    assert_eq!(app.count(kept).await, 10, "the pending and the recent ones");
    let metrics = app.get("/metrics", "").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"table="webhook_deliveries"} 55"#),
        "counted: {}",
        metrics
            .lines()
            .filter(|l| l.contains("webhook_deliveries"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    app.stop().await;
}
