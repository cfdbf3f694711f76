//! The real `kh-review serve` binary as a child process, sharing a test app's stores: for
//! what only a process shows (signals, its own environment).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::app::{expose, TestApp};
use super::inspect::wait_for;
use kh_review_testkit::proxy::dead_port;

/// Kills the child process if the test fails before it exits.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    /// Stops the process as an orchestrator does (SIGTERM) and waits (15 s at most) for
    /// it to exit; returns how it exited.
    pub async fn terminate(self) -> ExitStatus {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let child = Mutex::new(self);
        wait_for(
            "the binary to exit on SIGTERM",
            Duration::from_secs(15),
            || {
                let exited = child.lock().unwrap().0.try_wait().ok().flatten();
                async move { exited }
            },
        )
        .await
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A build of the binary and the `config/` it was built with (each release reads its own
/// defaults, as its image ships them).
pub struct Build {
    pub binary: PathBuf,
    pub config: PathBuf,
    /// The migrations it applies.
    pub migrations: PathBuf,
}

impl Build {
    /// This build.
    pub fn this() -> Self {
        Self {
            binary: PathBuf::from(env!("CARGO_BIN_EXE_kh-review")),
            config: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/config")),
            migrations: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations")),
        }
    }

    /// Another release's, from the checkout `dir` of its sources (`scripts/upgrade_from.sh`
    /// puts its binary in `bin/` there).
    pub fn checkout(dir: &Path) -> Self {
        Self {
            binary: dir.join("bin/kh-review"),
            config: dir.join("config"),
            migrations: dir.join("migrations"),
        }
    }
}

/// Starts `kh-review serve` on `port`, sharing `app`'s stores, with `envs` on top.
pub fn serve_binary(app: &TestApp, port: u16, envs: &[(&str, String)]) -> KillOnDrop {
    serve_build(&Build::this(), app, port, envs)
}

/// [`serve_binary`] of another build (an older release's).
pub fn serve_build(build: &Build, app: &TestApp, port: u16, envs: &[(&str, String)]) -> KillOnDrop {
    let mut cmd = Command::new(&build.binary);
    cmd.arg("serve")
        .env("APP_CONFIG_DIR", &build.config)
        .env("APP__SERVER__PORT", port.to_string())
        .env("APP__ENVIRONMENT", "development")
        .env("APP__SERVER__TEST_HOOKS", "true")
        .env("APP__DATABASE__URL", expose(&app.settings.database.url))
        .envs(
            app.settings
                .database
                .migrate_url
                .as_ref()
                .map(|owner| ("APP__DATABASE__MIGRATE_URL", expose(owner))),
        )
        .env("APP__REDIS__KEY_PREFIX", &app.shared.prefix)
        .env("APP__MONGO__DATABASE", &app.shared.mongo_db)
        .env("APP__AMQP__EXCHANGE", &app.shared.exchange)
        .env("APP__AMQP__BIND_QUEUE", "")
        .env("APP__LOG__LEVEL", "warn")
        // Tests that stop it do not wait for a load balancer: no drain unless one asks.
        .env("APP__SHUTDOWN__DRAIN_SECS", "0")
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

/// Runs `kh-review <args>` on `config/default.toml` with `envs` and none of this process's
/// `APP_` variables, on a free port, with every store at a dead port (a process that should
/// have refused to start touches nothing); waits (10 s at most) for it to exit and returns
/// its exit code and what it wrote (stdout, then stderr).
pub async fn run_binary(args: &[&str], envs: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kh-review"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("APP_")) {
        cmd.env_remove(k);
    }
    cmd.args(args)
        .env(
            "APP_CONFIG_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
        )
        .env("APP__SERVER__PORT", dead_port().to_string())
        .envs(dead_stores())
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = Mutex::new(KillOnDrop(
        cmd.spawn().expect("the kh-review binary starts"),
    ));
    let status = wait_for("the binary to exit", Duration::from_secs(10), || {
        let exited = child.lock().unwrap().0.try_wait().unwrap();
        async move { exited }
    })
    .await;
    let mut child = child.into_inner().unwrap();
    let mut out = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (status.code(), out)
}

fn dead_stores() -> [(&'static str, String); 4] {
    let dead = dead_port();
    [
        (
            "APP__DATABASE__URL",
            format!("postgres://kh@127.0.0.1:{dead}/none"),
        ),
        ("APP__REDIS__URL", format!("redis://127.0.0.1:{dead}")),
        ("APP__MONGO__URL", format!("mongodb://127.0.0.1:{dead}")),
        ("APP__AMQP__URLS", format!("amqp://127.0.0.1:{dead}/%2f")),
    ]
}
