//! Load from `wrk` (the same for kh-review and for the benchmark peer, `make bench-peer`):
//! one approval of each review id given, `benches/peer/approve.lua`, over `conc`
//! connections for a fixed time. `wrk` is a C program with its own event loop: it drives a
//! 2-core machine's services harder than this process's HTTP client could, and spends little
//! of the CPU they share.

use std::time::Duration;

use uuid::Uuid;

use super::Figures;

/// The approval script, read by `wrk`.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer/approve.lua");

/// The `wrk` binary: `KH_WRK`, else the one on the `PATH` (`make bench-peer` installs it).
fn wrk_bin() -> String {
    std::env::var("KH_WRK").unwrap_or_else(|_| "wrk".to_string())
}

/// Approves `ids` at `base` (one each, in order per connection) with `token` for `time`;
/// the figures of the run. Every reply must be a 2xx: a run that outlasts its ids gets
/// 404s (the script's), and fails here rather than count them.
pub async fn wrk_approvals(
    base: &str,
    ids: &[Uuid],
    token: &str,
    conc: usize,
    time: Duration,
) -> anyhow::Result<Figures> {
    let file = std::env::temp_dir().join(format!("kh-bench-wrk-{}.ids", std::process::id()));
    let lines: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    std::fs::write(&file, lines.join("\n"))?;
    let out = tokio::process::Command::new(wrk_bin())
        .args([
            "-t2",
            &format!("-c{conc}"),
            &format!("-d{}s", time.as_secs()),
        ])
        .args(["--latency", "-s", SCRIPT, base])
        .env("KH_WRK_IDS", &file)
        .env("KH_WRK_TOKEN", token)
        .output()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "{} failed to start ({e}): `make bench-peer` installs it",
                wrk_bin()
            )
        })?;
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    anyhow::ensure!(
        out.status.success(),
        "wrk failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = parse(&text).ok_or_else(|| anyhow::anyhow!("wrk printed no figures:\n{text}"))?;
    anyhow::ensure!(
        f.errors == 0,
        "{} of {} replies were not 2xx, or the socket failed (more ids needed?):\n{text}",
        f.errors,
        f.ops
    );
    Ok(f)
}

/// The figures in `wrk --latency`'s report.
fn parse(text: &str) -> Option<Figures> {
    let after = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix).map(str::trim))
    };
    let requests: usize = text
        .lines()
        .find(|l| l.contains(" requests in "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let non_2xx: usize = after("Non-2xx or 3xx responses:").map_or(Some(0), |v| v.parse().ok())?;
    // "Socket errors: connect 0, read 0, write 0, timeout 0"
    let socket: usize = after("Socket errors:").map_or(0, |v| {
        v.split(',')
            .filter_map(|kv| kv.split_whitespace().nth(1)?.parse::<usize>().ok())
            .sum()
    });
    Some(Figures {
        ops: requests,
        ops_per_sec: after("Requests/sec:")?.parse().ok()?,
        p50_ms: duration_ms(after("50%")?)?,
        p99_ms: duration_ms(after("99%")?)?,
        errors: non_2xx + socket,
        note: String::new(),
    })
}

/// `24.30ms`, `812.00us`, `1.02s`, `1.50m` in milliseconds.
fn duration_ms(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => return None,
    })
}
