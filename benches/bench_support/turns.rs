//! Round trips counted on the wire: a TCP proxy in front of each store that counts, on
//! every connection through it, each time the client sends after the server has answered
//! (one turn of the conversation, whatever the protocol). Bytes the client sends in a row
//! without an answer between them (a pipelined batch) are one round trip; a server's reply
//! read in several pieces is still one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A counting proxy to one store.
pub struct Turns {
    pub port: u16,
    count: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Turns {
    /// Listens on a free loopback port and forwards every connection to `upstream`
    /// (`host:port`).
    pub async fn start(upstream: String) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let count = Arc::new(AtomicU64::new(0));
        let counted = count.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, counted) = (upstream.clone(), counted.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        relay(client, server, counted).await;
                    }
                });
            }
        });
        Ok(Self { port, count, task })
    }

    /// Round trips so far, over every connection.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies both ways until either side closes, counting the client's turns.
async fn relay(client: TcpStream, server: TcpStream, count: Arc<AtomicU64>) {
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    // True once the server has sent something since the client last did: the client's
    // next send starts a round trip.
    let answered = Arc::new(AtomicBool::new(true));
    let heard = answered.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if answered.swap(false, Ordering::AcqRel) {
                count.fetch_add(1, Ordering::Relaxed);
            }
            if server_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = server_tx.shutdown().await;
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            heard.store(true, Ordering::Release);
            if client_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_tx.shutdown().await;
    };
    tokio::join!(up, down);
}

/// The host:port of a store URL (`scheme://[user[:password]@]host:port[/...]`).
pub fn host_port(url: &str) -> anyhow::Result<String> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow::anyhow!("not a URL: {url}"))?;
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Ok(host.to_string())
}

/// `url` with its host:port replaced by the proxy's.
pub fn through(url: &str, proxy: &Turns) -> anyhow::Result<String> {
    let target = host_port(url)?;
    Ok(url.replacen(&target, &format!("127.0.0.1:{}", proxy.port), 1))
}
