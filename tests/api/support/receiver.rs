//! A Standard Webhooks receiver in Python (tests/consumers/webhook_receiver.py, in the
//! virtualenv scripts/events_venv.sh installs): it verifies each delivery with the
//! reference `standardwebhooks` package, once per secret it was given, answers as its
//! reply script says, and prints one JSON line per request, which [`Receiver`] collects.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::inspect::wait_for;

/// One request the receiver got, and when the test heard of it.
#[derive(Debug, Clone)]
pub struct Received {
    pub record: Value,
    pub at: Instant,
}

/// A running receiver; killed when dropped.
pub struct Receiver {
    child: Child,
    pub port: u16,
    seen: Arc<Mutex<Vec<Received>>>,
}

/// The python of the consumer tests' virtualenv (scripts/events_venv.sh: the CloudEvents
/// consumer's and this receiver's); fails loudly, saying how to install it, when missing.
pub fn venv_python() -> PathBuf {
    let tools = std::env::var("KH_TOOLS_DIR").unwrap_or_else(|_| "/var/tmp/kh-review-tools".into());
    let python = PathBuf::from(tools).join("events-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: install the consumer tests' virtualenv with `scripts/events_venv.sh` (make test does)",
        python.display()
    );
    python
}

impl Receiver {
    /// Starts a receiver verifying with `secrets`, answering by `reply` (see the script),
    /// on `port` (0: any free one).
    pub async fn start(secrets: &[&str], reply: &str, port: u16) -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/consumers/webhook_receiver.py"
        );
        let mut cmd = Command::new(venv_python());
        cmd.arg(script)
            .args(["--reply", reply, "--port", &port.to_string()]);
        for s in secrets {
            cmd.args(["--secret", s]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the webhook receiver starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the receiver says where it listens within 20 s")
            .unwrap()
            .expect("the receiver printed its port");
        let listening: Value = serde_json::from_str(&first).unwrap();
        let port = listening["listening"].as_u64().expect("a port") as u16;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let record: Value = serde_json::from_str(&line).unwrap();
                let at = Instant::now();
                into.lock().unwrap().push(Received { record, at });
            }
        });
        Receiver { child, port, seen }
    }

    /// Its URL at `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request it got so far.
    pub fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until it got `n` requests: the first `n`.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        wait_for(
            &format!("{n} webhook requests"),
            Duration::from_secs(30),
            || async {
                let seen = self.seen();
                (seen.len() >= n).then(|| seen[..n].to_vec())
            },
        )
        .await
    }

    /// Kills it at once (SIGKILL), connections in flight with it.
    pub async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}
