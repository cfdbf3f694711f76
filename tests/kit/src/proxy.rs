//! A TCP proxy the test can cut and restore, to make a real server unreachable for the
//! service (and only for it) without stopping the shared server, or slow one connection's
//! requests down.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Requests (client to server) that contain `pattern` reach the server `by` late, and so
/// does everything sent after them on the same connection: one stalled connection, the
/// others unaffected.
#[derive(Clone)]
struct Delay {
    pattern: Vec<u8>,
    by: Duration,
}

type DelayRule = Arc<Mutex<Option<Delay>>>;

pub struct Proxy {
    pub port: u16,
    state: Arc<Mutex<(bool, CancellationToken)>>,
    stop: CancellationToken,
    /// Cancelled to stop forwarding while keeping every connection open (a partition).
    freeze: Arc<Mutex<CancellationToken>>,
    delay: DelayRule,
}

impl Proxy {
    pub async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new((true, CancellationToken::new())));
        let stop = CancellationToken::new();
        let freeze = Arc::new(Mutex::new(CancellationToken::new()));
        let delay = DelayRule::default();
        let (st, stop2, fr) = (state.clone(), stop.clone(), freeze.clone());
        let rule = delay.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop2.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((inbound, _)) = accepted else {
                    continue;
                };
                let (enabled, cut) = st.lock().unwrap().clone();
                if !enabled {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let frozen = fr.lock().unwrap().clone();
                let rule = rule.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    // No Nagle delay on either leg: a proxied request/reply exchange must not
                    // wait for the peer's delayed ACK (about 40 ms each time).
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    // The halves live in this task, not in the pumps: a freeze drops the pumps
                    // and must leave both sockets open (no FIN, no RST), as a partition does.
                    let (mut client_r, mut client_w) = inbound.into_split();
                    let (mut server_r, mut server_w) = outbound.into_split();
                    let both = futures_util::future::join(
                        pump(&mut client_r, &mut server_w, Some(rule)),
                        pump(&mut server_r, &mut client_w, None),
                    );
                    tokio::select! {
                        _ = both => {}
                        _ = cut.cancelled() => {}
                        // Hold both ends open, silent, until cut.
                        _ = frozen.cancelled() => cut.cancelled().await,
                    }
                });
            }
        });
        Self {
            port,
            state,
            stop,
            freeze,
            delay,
        }
    }

    /// A proxy in front of the server `url` names, and `url` rewritten to go through it.
    pub async fn in_front_of(url: &str) -> (Self, String) {
        let target = host_port(url);
        let proxy = Self::start(target.clone()).await;
        let via = url.replacen(&target, &format!("127.0.0.1:{}", proxy.port), 1);
        (proxy, via)
    }

    /// Stops forwarding on every open connection but keeps them open, like a network
    /// partition; `cut` ends them.
    pub fn freeze(&self) {
        self.freeze.lock().unwrap().cancel();
    }

    /// Drops every open connection and refuses new ones.
    pub fn cut(&self) {
        let mut st = self.state.lock().unwrap();
        st.0 = false;
        st.1.cancel();
        st.1 = CancellationToken::new();
    }

    pub fn restore(&self) {
        self.state.lock().unwrap().0 = true;
    }

    /// From now on, a request containing `pattern` reaches the server `by` late, and the
    /// requests after it on its connection wait behind it (open connections included).
    pub fn delay_requests_containing(&self, pattern: &[u8], by: Duration) {
        *self.delay.lock().unwrap() = Some(Delay {
            pattern: pattern.to_vec(),
            by,
        });
    }
}

/// Copies `from` to `to` until either ends. With a delay rule (requests only), a chunk that
/// contains the rule's pattern (also across two reads) is held back `by`; reading stops
/// meanwhile, so what follows on this connection keeps its order behind it.
async fn pump(from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf, rule: Option<DelayRule>) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let delay = rule.as_ref().and_then(|r| r.lock().unwrap().clone());
        if let Some(d) = delay {
            let mut seen = std::mem::take(&mut tail);
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(d.pattern.len()).any(|w| w == d.pattern) {
                tokio::time::sleep(d.by).await;
            }
            let keep = d.pattern.len().saturating_sub(1).min(seen.len());
            tail = seen[seen.len() - keep..].to_vec();
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.stop.cancel();
    }
}

/// A server that accepts connections and never answers: a hung dependency.
pub async fn blackhole() -> (u16, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            tokio::select! {
                _ = s.cancelled() => return,
                a = listener.accept() => if let Ok((c, _)) = a { held.push(c) },
            }
        }
    });
    (port, stop)
}

/// The `host:port` of a URL like `scheme://user:pass@host:port/path`.
fn host_port(url: &str) -> String {
    let after = url.split("://").nth(1).unwrap_or(url);
    let after = after.rsplit_once('@').map(|(_, h)| h).unwrap_or(after);
    after.split('/').next().unwrap_or(after).to_string()
}

/// A port nobody listens on.
pub fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
