//! The service under test: its binary (cargo builds it with the benchmark, in the
//! benchmark's profile: release for `make bench`, debug for `make bench-smoke`), started as
//! its own process against the benchmark's stores, and stopped (SIGTERM, then kill) when
//! dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use secrecy::ExposeSecret;

use super::{names, sized, BenchEnv};

impl BenchEnv {
    /// Starts the service's binary with the benchmark's stores.
    pub async fn spawn_service(
        &self,
        name: &str,
        extra: &[(&str, String)],
    ) -> anyhow::Result<Service> {
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kh-review"));
        anyhow::ensure!(
            bin.exists(),
            "the service's binary is missing: {} (cargo builds it with the benchmark)",
            bin.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .env(
                "APP_CONFIG_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
            )
            .env("APP__SERVER__PORT", port.to_string())
            // As production runs: the service's role, walled by row-level security.
            .env("APP__DATABASE__URL", &self.service_pg_url)
            .env("APP__DATABASE__MIGRATE_URL", &self.pg_url)
            .env("APP__DATABASE__MAX_CONNECTIONS", "40")
            .env("APP__DATABASE__MIGRATE_ON_START", "false")
            .env("APP__REDIS__URL", &self.redis_url)
            .env("APP__REDIS__KEY_PREFIX", &names().redis_prefix)
            .env("APP__MONGO__URL", &self.mongo_url)
            .env("APP__MONGO__DATABASE", &names().db)
            .env("APP__AMQP__URLS", &self.amqp_url)
            .env("APP__AMQP__EXCHANGE", &names().exchange)
            .env("APP__AMQP__BIND_QUEUE", "")
            .env("APP__OUTBOX__BACKOFF_MAX_MS", "1000")
            .env("APP__OUTBOX__POLL_INTERVAL_MS", "100")
            .env("APP__LOG__LEVEL", "error")
            // The overdue sweeper and the re-verification scheduler commit a transaction
            // every pass: the cost row's commit counter would never stand still. The
            // workflow rows turn the sweeper back on.
            .env("APP__REVIEW__OVERDUE_SWEEP_MS", "3600000")
            .env("APP__REVIEW__REVERIFY_SWEEP_MS", "3600000")
            // An audit checkpoint publishes an `audit.checkpoint` event every 300 s: a row
            // that counts the events on the queue would take it for a duplicate approval
            // (the space-lists group's instance lives past 300 s while 900,000 documents load).
            .env("APP__AUDIT__CHECKPOINT_SECS", "86400")
            .env(
                "APP__AUTH__JWT_SECRET",
                self.settings.auth.jwt_secret.expose_secret(),
            )
            .env("APP__ENVIRONMENT", "development")
            // Stopped, an instance serves on for `shutdown.drain_secs` (5 s) so that a load
            // balancer sees it go; the smoke run has none to wait for, and a dozen instances.
            .env("APP__SHUTDOWN__DRAIN_SECS", sized("5", "0"))
            .stdout(Stdio::null());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn()?;
        let svc = Service {
            name: name.to_string(),
            base: format!("http://127.0.0.1:{port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = self.http.get(format!("{}/readyz", svc.base)).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "service {name} did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(svc)
    }
}

/// A running service process; killed when dropped.
pub struct Service {
    pub name: String,
    pub base: String,
    child: Child,
}

impl Service {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident memory of the process so far (VmHWM).
    pub fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no VmHWM in /proc status"))?;
        Ok(kb / 1024.0)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
