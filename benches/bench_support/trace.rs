//! Approve over HTTP with trace export on (every span sent over OTLP/HTTP to a real
//! receiver, the test kit's, in this process, which decodes and keeps each one) against
//! export off, measured in turns in one run (`KH_BENCH_ONLY=trace` alone). Export off still
//! makes every span (ids, the `traceparent` of each event): the row prices the export itself.

use kh_review_testkit::otlp::OtlpReceiver;

use super::{approve_load, interleaved_rounds, round_count, sized, BenchEnv, Measure, Report};

/// The rows; returns the p50 ratio (export on / off) at concurrency 1.
pub async fn trace_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let receiver = OtlpReceiver::start().await?;
    let off = env.spawn_service("trace-off", &[]).await?;
    let on = env
        .spawn_service(
            "trace-on",
            &[("APP__TELEMETRY__OTLP_ENDPOINT", receiver.endpoint())],
        )
        .await?;
    let mut at_one = 0.0;
    // At concurrency 1 the ratio is that of two p50s a few hundred µs apart in about 5 ms:
    // over 3 rounds of 150 it came out anywhere from 0.76x to 1.14x on an unchanged build,
    // so that row takes 9 rounds of 300.
    for (conc, n, rounds) in [
        (1usize, sized(300, 10), sized(9, 1)),
        (16, sized(480, 32), round_count()),
    ] {
        let without: Measure = Box::new(|| Box::pin(approve_load(env, &off, conc, n)));
        let with: Measure = Box::new(|| Box::pin(approve_load(env, &on, conc, n)));
        let [without, with] = interleaved_rounds(vec![without, with], rounds)
            .await?
            .try_into()
            .expect("two rows");
        let ratio = with.p50_ms / without.p50_ms;
        report.row("approve over HTTP, trace export off", conc, &without, None);
        report.row(
            "approve over HTTP, trace export on (OTLP/HTTP to the kit's receiver)",
            conc,
            &with,
            Some(("p50 vs export off", ratio)),
        );
        if conc == 1 {
            at_one = ratio;
        }
    }
    // The instance did export: spans of its rounds reach the receiver, the first within
    // a few of its export intervals (1 s; a smoke run's rounds can all end before the
    // first export, so the count is waited for, not read once).
    let received = receiver
        .wait_spans(1, std::time::Duration::from_secs(10))
        .await
        .map_err(|_| {
            anyhow::anyhow!("trace export on, yet no span reached the receiver in 10 s")
        })?;
    report.note(format!(
        "trace export: {received} spans received over OTLP/HTTP"
    ));
    report.goal(
        "approve p50 with trace export on / off, concurrency 1",
        format!("{at_one:.3}x"),
        "at most 1.05x",
        at_one <= 1.05,
    );
    Ok(at_one)
}
