//! HAProxy in front of instances, as the test's own child process on 127.0.0.1 (Debian's
//! haproxy, installed by `scripts/services.sh up load-balancer`): health checks on
//! `/readyz` every 500 ms (down after 2 failures, up after 1 success), a request that
//! finds no connection or an empty answer tried again on another instance (the load's
//! POSTs carry idempotency keys, so a second try is a replay, never a second change), and
//! its statistics as CSV for what the test reads back.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::binary::KillOnDrop;
use super::inspect::wait_for;
use kh_review_testkit::proxy::dead_port;

pub struct Haproxy {
    pub port: u16,
    stats: u16,
    _process: KillOnDrop,
    _dir: tempdir::Dir,
}

/// One backend server's line of the statistics.
#[derive(Debug)]
pub struct ServerStats {
    pub name: String,
    pub status: String,
    /// Requests tried again on this server's account, and sent to another one.
    pub retries: u64,
    pub redispatches: u64,
}

impl Haproxy {
    /// Starts HAProxy in front of `backends` (ports on 127.0.0.1, named `i0`, `i1`, ...).
    pub fn start(backends: &[u16]) -> Self {
        let (port, stats) = (dead_port(), dead_port());
        let dir = tempdir::Dir::new("kh-haproxy");
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, p)| format!("    server i{i} 127.0.0.1:{p} check\n"))
            .collect();
        let config = format!(
            "global\n    maxconn 2000\n\
             defaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n\
             \x20   timeout server 30s\n    timeout http-keep-alive 10s\n\
             \x20   option http-buffer-request\n    retries 3\n\
             \x20   retry-on conn-failure empty-response\n    option redispatch 1\n\
             frontend api\n    bind 127.0.0.1:{port}\n    default_backend instances\n\
             frontend stats\n    bind 127.0.0.1:{stats}\n    stats enable\n    stats uri /stats\n\
             backend instances\n    balance roundrobin\n    option httpchk GET /readyz\n\
             \x20   http-check expect status 200\n\
             \x20   default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 1\n\
             {servers}"
        );
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let process = Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy runs (scripts/services.sh up load-balancer installs it)");
        Self {
            port,
            stats,
            _process: KillOnDrop(process),
            _dir: dir,
        }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The backend servers as HAProxy sees them now.
    pub async fn servers(&self) -> Vec<ServerStats> {
        let url = format!("http://127.0.0.1:{}/stats;csv", self.stats);
        let Ok(r) = reqwest::get(url).await else {
            return Vec::new(); // not listening yet
        };
        let text = r.text().await.unwrap_or_default();
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (px, sv, st) = (col("pxname"), col("svname"), col("status"));
        let (wretr, wredis) = (col("wretr"), col("wredis"));
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.len() > st && f[px] == "instances" && f[sv].starts_with('i'))
            .map(|f| ServerStats {
                name: f[sv].to_string(),
                status: f[st].to_string(),
                retries: f[wretr].parse().unwrap_or(0),
                redispatches: f[wredis].parse().unwrap_or(0),
            })
            .collect()
    }

    /// Waits until HAProxy's health check has `name` in the state `status` (UP, DOWN).
    pub async fn wait_server(&self, name: &str, status: &str, deadline: Duration) {
        wait_for(
            &format!("haproxy to see {name} {status}"),
            deadline,
            || async {
                let servers = self.servers().await;
                let s = servers.iter().find(|s| s.name == name)?;
                s.status.starts_with(status).then_some(())
            },
        )
        .await
    }
}

/// A directory removed when dropped.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(prefix: &str) -> Self {
            let path = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
