//! The outbox drain: approvals committed while RabbitMQ is unreachable, delivered once it is
//! back; and its floor, confirmed publishes straight to the broker.

use std::time::{Duration, Instant};

use super::cost::{cpu_seconds, Stores, StoresCpu};
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
    // The CPU is counted from the first event on the queue: the reconnect before it is not
    // the drain's work.
    let mut at_first = None;
    let (first_after, all_after) = env
        .await_queue(n, t, || {
            at_first = Some(DrainCpu::now(env, Some(svc.pid())))
        })
        .await?;
    let at_first = at_first.expect("taken at the first event");
    let cpu = DrainCpu::now(env, Some(svc.pid())).per_event(&at_first, n);
    env.purge_queue().await?;
    drop(svc);
    Ok(Drained {
        events: n,
        first_after,
        all_after,
        projections_after,
        cpu,
    })
}

/// CPU of the processes a drain runs in, from `/proc`: seconds at one moment, or
/// milliseconds per event between two ([`DrainCpu::per_event`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct DrainCpu {
    pub service: f64,
    pub postgres: f64,
    pub rabbitmq: f64,
    /// This process: the proxy in front of RabbitMQ and the queue's polling during a
    /// drain; the client during the floor.
    pub bench: f64,
}

impl DrainCpu {
    pub fn now(env: &BenchEnv, service: Option<u32>) -> Self {
        let stores = StoresCpu::now(Stores::of(&env.amqp_url, &env.mongo_url));
        Self {
            service: service.map_or(0.0, |pid| cpu_seconds(&pid.to_string())),
            postgres: stores.postgres,
            rabbitmq: stores.rabbitmq,
            bench: cpu_seconds("self"),
        }
    }

    pub fn per_event(&self, before: &Self, n: usize) -> Self {
        let ms = |now: f64, then: f64| (now - then) * 1000.0 / n as f64;
        Self {
            service: ms(self.service, before.service),
            postgres: ms(self.postgres, before.postgres),
            rabbitmq: ms(self.rabbitmq, before.rabbitmq),
            bench: ms(self.bench, before.bench),
        }
    }
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
    /// Milliseconds of CPU per event, from the first event on the queue to the last.
    pub cpu: DrainCpu,
}

impl Drained {
    /// Events per second from the first event to the last: the drain itself.
    pub fn rate(&self) -> f64 {
        (self.events - 1) as f64 / (self.all_after - self.first_after).max(1e-3)
    }
}
