//! The rows about volume: the outbox drain against a raw publish floor, and the review path
//! once every store holds a knowledge base of a realistic size.

use super::{approve_load, env_size, outbox_drain, rounds, sized, BenchEnv, Report};

/// (drain events per second, raw confirmed publishes per second)
pub async fn drain_row(report: &mut Report, env: &BenchEnv) -> anyhow::Result<(f64, f64)> {
    let n = sized(2_000, 50);
    // The floor takes a tenth of a second: the median of three, so one hiccup is not it.
    let mut raws = Vec::new();
    for _ in 0..3 {
        raws.push(env.raw_publish_rate(n).await?);
    }
    raws.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (raw, raw_cpu) = raws[1];
    let batch = env.settings.outbox.batch_size;
    let d = outbox_drain(env, n).await?;
    let drain = d.rate();
    report.note(format!(
        "outbox drain: {n} events committed while RabbitMQ was unreachable (their projections done {:.2} s after the last approval); \
         after it returned, the first was on the queue in {:.2} s \
         and the last in {:.2} s: {drain:.0} events/s from first to last ({:.0} events/s counting from its return); \
         floor: {raw:.0} confirmed publishes/s straight to the broker (median of 3 runs), in batches of {batch} ({:.2}x)",
        d.projections_after,
        d.first_after,
        d.all_after,
        n as f64 / d.all_after,
        drain / raw
    ));
    let c = d.cpu;
    report.note(format!(
        "outbox drain, CPU per event (ms, from the first event on the queue to the last): service {:.3}, \
         PostgreSQL {:.3}, RabbitMQ {:.3}, this benchmark (the proxy in front of RabbitMQ) {:.3}; \
         floor (its median run): RabbitMQ {:.3}, its client {:.3}",
        c.service, c.postgres, c.rabbitmq, c.bench, raw_cpu.rabbitmq, raw_cpu.bench
    ));
    Ok((drain, raw))
}

/// Preloads the stores, then approves at concurrency 1 on a fresh instance. Returns its p50
/// over `empty_p50` (the same row on empty stores).
pub async fn data_size_row(
    report: &mut Report,
    env: &BenchEnv,
    empty_p50: f64,
) -> anyhow::Result<f64> {
    let n = env_size("KH_BENCH_PRELOAD", 100_000, 200);
    let secs = env.preload(n).await?;
    report.note(format!(
        "preloaded {n} approved documents (PostgreSQL rows, MongoDB projections, Redis fence keys) in {secs:.0} s"
    ));
    let svc = env.spawn_service("grown", &[]).await?;
    let grown = rounds(|| approve_load(env, &svc, 1, sized(150, 10))).await?;
    let ratio = grown.p50_ms / empty_p50;
    report.row(
        &format!("approve over HTTP, Redis up, {n} documents already in every store"),
        1,
        &grown,
        Some(("p50 vs empty stores", ratio)),
    );
    Ok(ratio)
}
