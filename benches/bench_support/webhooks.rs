//! The webhook rows: approvals with no webhook endpoint in their space, against approvals
//! with one endpoint taking every event (its deliveries made by the outbox's trigger in
//! the approval's transaction, and sent meanwhile by the deliverer to a receiver in this
//! process), in turns on the same instance; and how long a delivery takes to arrive
//! (the event's `occurred_at` to the receiver).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use uuid::Uuid;

use super::{approve_load, interleaved, sized, BenchEnv, Figures, Measure, Report};

/// Each delivery's lag, in milliseconds, as the receiver saw it.
type Lags = Arc<Mutex<Vec<f64>>>;

/// A receiver answering 204 to every POST, on keep-alive connections: its port.
async fn receiver(lags: Lags) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, lags.clone()));
        }
    });
    Ok(port)
}

/// Answers the requests of one connection until it closes.
async fn serve(socket: tokio::net::TcpStream, lags: Lags) {
    let (read, mut write) = socket.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if read.read_exact(&mut body).await.is_err() {
            return;
        }
        if let Some(lag) = lag_of(&body) {
            lags.lock().unwrap().push(lag);
        }
        let reply = b"HTTP/1.1 204 No Content\r\n\r\n";
        if write.write_all(reply).await.is_err() {
            return;
        }
    }
}

/// Milliseconds from the event's `occurred_at` to now.
fn lag_of(body: &[u8]) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let at: DateTime<Utc> = v["occurred_at"].as_str()?.parse().ok()?;
    Some((Utc::now() - at).num_microseconds()? as f64 / 1000.0)
}

/// Turns the bench's endpoint on or off.
async fn endpoint(env: &BenchEnv, id: Uuid, enabled: bool) -> anyhow::Result<()> {
    sqlx::query("UPDATE webhooks SET enabled = $2 WHERE id = $1")
        .bind(id)
        .bind(enabled)
        .execute(&env.pg)
        .await?;
    Ok(())
}

/// Waits until no delivery to the endpoint `id` is pending (at most 2 minutes).
async fn drained(env: &BenchEnv, id: Uuid) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let pending: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $1 AND state = 'pending'",
        )
        .bind(id)
        .fetch_one(&env.pg)
        .await?;
        if pending == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "{pending} webhook deliveries still pending after 2 minutes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Approvals without and with an endpoint, at 1 and 16 at once; then the deliveries' lag.
pub async fn webhook_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let lags: Lags = Arc::default();
    let port = receiver(lags.clone()).await?;
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO webhooks (id, space_id, url, event_types, secret, created_by, enabled) \
         VALUES ($1, 'default', $2, '{document.submitted,document.approved}', \
                 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'bench', false)",
    )
    .bind(id)
    .bind(format!("http://127.0.0.1:{port}/bench"))
    .execute(&env.pg)
    .await?;
    let ranges = [("APP__WEBHOOKS__ALLOWED_RANGES", "127.0.0.1/32".to_string())];
    let svc = env.spawn_service("webhooks", &ranges).await?;
    let mut with_ratio = 0.0;
    for conc in [1usize, 16] {
        let n = sized(if conc == 1 { 300 } else { 1_500 }, 20);
        let (svc, env) = (&svc, env);
        let none: Measure = Box::new(move || {
            Box::pin(async move {
                endpoint(env, id, false).await?;
                approve_load(env, svc, conc, n).await
            })
        });
        let one: Measure = Box::new(move || {
            Box::pin(async move {
                endpoint(env, id, true).await?;
                approve_load(env, svc, conc, n).await
            })
        });
        let [none, one]: [Figures; 2] = interleaved(vec![none, one])
            .await?
            .try_into()
            .expect("two rows");
        report.row(
            "approve, no webhook endpoint in the space",
            conc,
            &none,
            None,
        );
        let ratio = one.p50_ms / none.p50_ms;
        let what = "approve, one webhook endpoint taking every event (sent meanwhile)";
        report.row(what, conc, &one, Some(("vs none", ratio)));
        if conc == 16 {
            with_ratio = ratio;
        }
    }
    // The lag, apart: the endpoint on, what the rounds left sent, then approvals one at a
    // time and their deliveries, every one of them.
    endpoint(env, id, true).await?;
    drained(env, id).await?;
    lags.lock().unwrap().clear();
    approve_load(env, &svc, 1, sized(300, 20)).await?;
    drained(env, id).await?;
    endpoint(env, id, false).await?;
    let mut lags = lags.lock().unwrap().clone();
    lags.sort_by(f64::total_cmp);
    let at = |q: f64| lags.get(((lags.len() as f64 - 1.0) * q) as usize).copied();
    report.note(format!(
        "webhook deliveries of approvals one at a time: {}, lag from the event to the receiver p50 {:.0} ms, p99 {:.0} ms (webhooks.poll_ms {})",
        lags.len(),
        at(0.5).unwrap_or(f64::NAN),
        at(0.99).unwrap_or(f64::NAN),
        env.settings.webhooks.poll.as_millis()
    ));
    Ok(with_ratio)
}
