//! The outbox drain: approvals committed while RabbitMQ is unreachable, delivered once it is
//! back; and its floor, confirmed publishes straight to the broker.

use std::time::Instant;

use super::{approve_each, BenchEnv, Proxy};

/// Commits `n` approvals while RabbitMQ is unreachable, brings it back, and times delivery.
pub async fn outbox_drain(env: &BenchEnv, n: usize) -> anyhow::Result<(usize, f64)> {
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
    env.expect_queue(n).await?;
    let secs = t.elapsed().as_secs_f64();
    drop(svc);
    Ok((n, secs))
}
