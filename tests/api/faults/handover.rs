//! An instance stopped while its dispatcher drains a backlog hands the backlog over: every
//! row it took is marked done (its event confirmed) or given back before it exits, so the
//! next instance publishes the rest at once (not after a take's 30 s hold), each event once
//! and in order.

use std::time::Duration;

use super::outbox::assert_in_order;
use crate::support::app::{spawn_app_with, AppOptions};
use kh_review_testkit::proxy::Proxy;
use kh_review_testkit::stores::amqp_url;

/// Documents approved while the broker is cut: two events each.
const DOCUMENTS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_stopped_mid_drain_leaves_no_row_taken_and_no_event_twice() {
    // The stores' owner only inspects them; A and then B deliver.
    let owner = spawn_app_with(AppOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let (proxy, via_proxy) = Proxy::in_front_of(&amqp_url()).await;
    proxy.cut();
    let a = spawn_app_with(AppOptions {
        share_with: Some(owner.shared.clone()),
        amqp_url: Some(via_proxy),
        outbox_batch: Some(3),
        ..Default::default()
    })
    .await;
    let mut docs = Vec::new();
    for _ in 0..DOCUMENTS {
        docs.push(a.approved_review().await);
    }
    owner.outbox_projected(Duration::from_secs(20)).await;
    // Each publish reaches the broker 300 ms late, so that the stop lands mid-drain.
    proxy.delay_requests_containing(owner.shared.exchange.as_bytes(), Duration::from_millis(300));
    proxy.restore();
    let mut events = owner.wait_events(3, Duration::from_secs(20)).await;
    a.stop().await; // graceful: its loops end, then the instance closes
    events.extend(owner.take_events().await.into_iter().map(|(v, _)| v));
    let total = 2 * DOCUMENTS;
    assert!(events.len() < total, "the stop came after the drain");
    assert_eq!(
        owner
            .count("SELECT count(*) FROM outbox WHERE done_at IS NULL AND claimed_until > now()")
            .await,
        0,
        "rows left taken by the stopped instance"
    );
    assert_eq!(
        owner
            .count(
                "SELECT count(*) FROM outbox WHERE done_at IS NOT NULL AND routing_key IS NOT NULL"
            )
            .await,
        events.len() as i64,
        "every event published is marked done, and only those (rows with no event aside)"
    );
    let b = spawn_app_with(AppOptions {
        share_with: Some(owner.shared.clone()),
        outbox_batch: Some(3),
        ..Default::default()
    })
    .await;
    let rest = total - events.len();
    events.extend(owner.wait_events(rest, Duration::from_secs(10)).await);
    owner.outbox_drained(Duration::from_secs(10)).await;
    events.extend(owner.take_events().await.into_iter().map(|(v, _)| v));
    // Each document's two events once each, in order: nothing published twice.
    assert_eq!(events.len(), total, "events: {events:?}");
    assert_in_order(&events, &docs);
    b.stop().await;
    owner.finish().await;
}
