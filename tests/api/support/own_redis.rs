//! A redis-server of the test's own, which it may flush, kill and restart.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::inspect::wait_for;
use super::proxy::dead_port;

pub struct OwnRedis {
    child: Child,
    pub port: u16,
}

impl OwnRedis {
    pub async fn start() -> Self {
        Self::start_on(dead_port()).await
    }

    pub async fn start_on(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (install with `make services`)");
        let own = Self { child, port };
        wait_for(
            "own redis-server to listen",
            Duration::from_secs(10),
            || async {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()
                    .map(|_| ())
            },
        )
        .await;
        own
    }
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
