//! Approve over HTTP with trace export on (every span sent over OTLP/HTTP to the real
//! receiver `make services` starts, Jaeger) against export off, measured in turns in one
//! run (`KH_BENCH_ONLY=trace` alone). Export off still makes every span (ids, the
//! `traceparent` of each event): the row prices the export itself.

use super::{approve_load, interleaved, sized, BenchEnv, Measure, Report};

/// The receiver's OTLP/HTTP endpoint (`KH_TEST_OTLP_ENDPOINT`, from `scripts/services.sh env`).
fn endpoint() -> String {
    std::env::var("KH_TEST_OTLP_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4318".into())
}

/// The rows; returns the p50 ratio (export on / off) at concurrency 1.
pub async fn trace_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let endpoint = endpoint();
    let addr = endpoint.trim_start_matches("http://").trim_end_matches('/');
    anyhow::ensure!(
        std::net::TcpStream::connect(addr).is_ok(),
        "no OTLP receiver at {endpoint}: run `make services` (it starts Jaeger)"
    );
    let off = env.spawn_service("trace-off", &[]).await?;
    let on = env
        .spawn_service("trace-on", &[("APP__TELEMETRY__OTLP_ENDPOINT", endpoint)])
        .await?;
    let mut at_one = 0.0;
    for (conc, n) in [(1usize, sized(150, 10)), (16, sized(480, 32))] {
        let without: Measure = Box::new(|| Box::pin(approve_load(env, &off, conc, n)));
        let with: Measure = Box::new(|| Box::pin(approve_load(env, &on, conc, n)));
        let [without, with] = interleaved(vec![without, with])
            .await?
            .try_into()
            .expect("two rows");
        let ratio = with.p50_ms / without.p50_ms;
        report.row("approve over HTTP, trace export off", conc, &without, None);
        report.row(
            "approve over HTTP, trace export on (OTLP/HTTP to Jaeger)",
            conc,
            &with,
            Some(("p50 vs export off", ratio)),
        );
        if conc == 1 {
            at_one = ratio;
        }
    }
    report.goal(
        "approve p50 with trace export on / off, concurrency 1",
        format!("{at_one:.3}x"),
        "at most 1.05x",
        at_one <= 1.05,
    );
    Ok(at_one)
}
