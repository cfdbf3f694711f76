//! A redis-server of the test's own, which it may flush, kill and restart.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::inspect::wait_for;
use kh_review_testkit::proxy::dead_port;

pub struct OwnRedis {
    child: Child,
    pub port: u16,
}

impl OwnRedis {
    pub async fn start() -> Self {
        Self::start_on(dead_port()).await
    }

    pub async fn start_on(port: u16) -> Self {
        Self::spawn(port, &["--port", &port.to_string()]).await
    }

    /// A server that speaks only TLS and wants `password`. Its certificate (for IP
    /// 127.0.0.1) is signed by a CA made for it in `dir`, by `openssl`; returns the CA's file.
    pub async fn start_tls(dir: &Path, password: &str) -> (Self, PathBuf) {
        let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
        let (ca, ca_key, cert, key, csr, ext) = (
            file("ca.crt"),
            file("ca.key"),
            file("redis.crt"),
            file("redis.key"),
            file("redis.csr"),
            file("san.ext"),
        );
        std::fs::write(&ext, "subjectAltName = IP:127.0.0.1\n").unwrap();
        let steps: [&[&str]; 3] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=kh-test-ca",
                "-keyout",
                &ca_key,
                "-out",
                &ca,
            ],
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                &key,
                "-out",
                &csr,
            ],
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &ext,
                "-out",
                &cert,
            ],
        ];
        for step in steps {
            let made = Command::new("openssl")
                .args(step)
                .stderr(Stdio::null())
                .status()
                .expect("openssl on PATH (Debian package openssl)");
            assert!(made.success(), "openssl {step:?} failed");
        }
        let port = dead_port();
        let args = ["--port", "0", "--tls-port", &port.to_string()];
        let tls = [
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
        ];
        let rest = ["--tls-auth-clients", "no", "--requirepass", password];
        let own = Self::spawn(port, &[&args[..], &tls, &rest].concat()).await;
        (own, PathBuf::from(ca))
    }

    async fn spawn(port: u16, args: &[&str]) -> Self {
        let child = Command::new("redis-server")
            .args(args)
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
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
