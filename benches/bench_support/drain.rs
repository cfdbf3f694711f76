//! The outbox drain: approvals committed while RabbitMQ is unreachable, delivered once it is
//! back; and its floor, confirmed publishes straight to the broker.

use std::time::Instant;

use super::{approve_each, BenchEnv, Proxy};

/// Commits `n` approvals while RabbitMQ is unreachable, brings it back, and times delivery.
pub async fn outbox_drain(env: &BenchEnv, n: usize) -> anyhow::Result<Drained> {
    let proxy = Proxy::start(env.amqp_host_port()).await;
    proxy.cut();
    let svc = env
        .spawn_service("drain", &[("APP__AMQP__URL", env.amqp_url_via(proxy.port))])
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
    let t = Instant::now();
    proxy.restore();
    let mut first = None;
    loop {
        let len = env.queue_len().await? as usize;
        if len > 0 && first.is_none() {
            first = Some(t.elapsed().as_secs_f64());
        }
        anyhow::ensure!(
            len <= n,
            "{len} events on the queue, expected {n}: duplicates"
        );
        if len == n {
            break;
        }
        anyhow::ensure!(
            t.elapsed().as_secs() < 120,
            "only {len} of {n} events delivered"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let all = t.elapsed().as_secs_f64();
    env.purge_queue().await?;
    drop(svc);
    Ok(Drained {
        events: n,
        first_after: first.unwrap_or(all),
        all_after: all,
    })
}

/// How an outbox drained once RabbitMQ was back.
pub struct Drained {
    pub events: usize,
    /// Seconds from RabbitMQ's return to the first event on the queue (reconnecting).
    pub first_after: f64,
    /// Seconds from RabbitMQ's return to the last.
    pub all_after: f64,
}

impl Drained {
    /// Events per second from the first event to the last: the drain itself.
    pub fn rate(&self) -> f64 {
        (self.events - 1) as f64 / (self.all_after - self.first_after).max(1e-3)
    }
}
