//! The real `kh-review serve` binary as a child process, sharing a test app's stores: for
//! what only a process shows (signals, its own environment).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::app::{expose, TestApp};
use super::inspect::wait_for;

/// Kills the child process if the test fails before it exits.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kh-review serve` on `port`, sharing `app`'s stores, with `envs` on top.
pub fn serve_binary(app: &TestApp, port: u16, envs: &[(&str, String)]) -> KillOnDrop {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kh-review"));
    cmd.arg("serve")
        .env(
            "APP_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .env("APP__SERVER__PORT", port.to_string())
        .env("APP__SERVER__TEST_HOOKS", "true")
        .env("APP__DATABASE__URL", expose(&app.settings.database.url))
        .env("APP__REDIS__KEY_PREFIX", &app.shared.prefix)
        .env("APP__MONGO__DATABASE", &app.shared.mongo_db)
        .env("APP__AMQP__EXCHANGE", &app.shared.exchange)
        .env("APP__AMQP__BIND_QUEUE", "")
        .env("APP__LOG__LEVEL", "warn")
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null());
    KillOnDrop(cmd.spawn().expect("the kh-review binary starts"))
}

/// Waits until the binary on `base` answers `/healthz`.
pub async fn listening(app: &TestApp, base: &str) {
    wait_for("the binary to listen", Duration::from_secs(30), || async {
        app.client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .ok()
            .map(|_| ())
    })
    .await
}
