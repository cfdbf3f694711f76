//! A TCP proxy the test can cut and restore, to make a real server unreachable for the
//! service (and only for it) without stopping the shared server.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub struct Proxy {
    pub port: u16,
    state: Arc<Mutex<(bool, CancellationToken)>>,
    stop: CancellationToken,
    /// Cancelled to stop forwarding while keeping every connection open (a partition).
    freeze: Arc<Mutex<CancellationToken>>,
}

impl Proxy {
    pub async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new((true, CancellationToken::new())));
        let stop = CancellationToken::new();
        let freeze = Arc::new(Mutex::new(CancellationToken::new()));
        let (st, stop2, fr) = (state.clone(), stop.clone(), freeze.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop2.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((mut inbound, _)) = accepted else {
                    continue;
                };
                let (enabled, cut) = st.lock().unwrap().clone();
                if !enabled {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let frozen = fr.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    // No Nagle delay on either leg: a proxied request/reply exchange must not
                    // wait for the peer's delayed ACK (about 40 ms each time).
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
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
