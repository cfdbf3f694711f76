//! The outbox drain: approvals committed while RabbitMQ is unreachable, delivered once it is
//! back; and its floor, confirmed publishes straight to the broker.

use std::time::{Duration, Instant};

use super::{approve_each, BenchEnv, Proxy};

/// Commits `n` approvals while RabbitMQ is unreachable, brings it back, and times delivery.
pub async fn outbox_drain(env: &BenchEnv, n: usize) -> anyhow::Result<Drained> {
    let (proxy, via_proxy) = Proxy::in_front_of(&env.amqp_url).await;
    proxy.cut();
    let svc = env
        .spawn_service("drain", &[("APP__AMQP__URLS", via_proxy)])
        .await?;
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    let f = approve_each(env, &svc, 16, reviews).await?;
    anyhow::ensure!(f.errors == 0, "approvals failed while RabbitMQ was down");
    anyhow::ensure!(
        env.queue_len().await? == 0,
        "events were published while RabbitMQ was unreachable"
    );
    let backlog = env.backlog().await?;
    anyhow::ensure!(
        backlog as usize >= n,
        "only {backlog} events waiting in the outbox"
    );
    // MongoDB is up all along, so the projections go on while RabbitMQ is away; an event
    // waits for its projection. RabbitMQ comes back once they are done, so that what is
    // timed is the publishing alone, the work its floor does (otherwise the figure is the
    // MongoDB stand-in's write rate whenever the approvals outran it).
    let waited = Instant::now();
    while env.unprojected().await? > 0 {
        anyhow::ensure!(
            waited.elapsed() < Duration::from_secs(120),
            "the projections did not catch up within 2 minutes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let projections_after = waited.elapsed().as_secs_f64();
    let t = Instant::now();
    proxy.restore();
    let (first_after, all_after) = env.await_queue(n, t).await?;
    env.purge_queue().await?;
    drop(svc);
    Ok(Drained {
        events: n,
        first_after,
        all_after,
        projections_after,
    })
}

/// How an outbox drained once RabbitMQ was back.
pub struct Drained {
    pub events: usize,
    /// Seconds from RabbitMQ's return to the first event on the queue (reconnecting).
    pub first_after: f64,
    /// Seconds from RabbitMQ's return to the last.
    pub all_after: f64,
    /// Seconds from the last approval's reply until every event's projection was written.
    pub projections_after: f64,
}

impl Drained {
    /// Events per second from the first event to the last: the drain itself.
    pub fn rate(&self) -> f64 {
        (self.events - 1) as f64 / (self.all_after - self.first_after).max(1e-3)
    }
}
