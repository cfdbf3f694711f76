//! A MongoDB wire-protocol proxy that reads the commands going by: it records each command
//! a client sends (so a test can see which write concern and read concern reached the
//! server), and can add a `writeConcernError` to the server's replies to one kind of
//! command, which is how a replica set answers a write that did not reach the concern in
//! time (FerretDB has no replica sets and never does). It counts the `update` commands on
//! their way (sent, not yet answered), and can hold their answers back until a number of
//! them has been sent. Only OP_MSG (opcode 2013) without compression is read; anything else
//! passes unchanged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mongodb::bson::{doc, Document};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const OP_MSG: i32 = 2013;
const CHECKSUM_PRESENT: u32 = 1;

#[derive(Default)]
struct Shared {
    commands: Mutex<Vec<Document>>,
    /// The command whose replies get a `writeConcernError`, while set.
    refuse: Mutex<Option<String>>,
    refused: AtomicUsize,
    /// `update` commands sent so far, on their way now, and the most on their way at once.
    updates_sent: AtomicUsize,
    updates_open: AtomicUsize,
    updates_open_max: AtomicUsize,
    /// While set: an `update`'s answer waits until this many have been sent (or
    /// [`HOLD_AT_MOST`] has passed).
    hold_until: Mutex<Option<usize>>,
    sent: tokio::sync::Notify,
}

/// The longest an answer is held back.
const HOLD_AT_MOST: Duration = Duration::from_secs(5);

pub struct MongoWireProxy {
    pub port: u16,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl MongoWireProxy {
    /// A proxy in front of the MongoDB server at `target` (`host:port`).
    pub async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let stop = CancellationToken::new();
        let (sh, st) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = st.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((inbound, _)) = accepted else { continue };
                let (target, sh, st) = (target.clone(), sh.clone(), st.clone());
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (client_r, client_w) = inbound.into_split();
                    let (server_r, server_w) = outbound.into_split();
                    let asked = Arc::new(Mutex::new(HashMap::new()));
                    let up = relay(client_r, server_w, sh.clone(), asked.clone(), true);
                    let down = relay(server_r, client_w, sh, asked, false);
                    tokio::select! {
                        _ = futures_util::future::join(up, down) => {}
                        _ = st.cancelled() => {}
                    }
                });
            }
        });
        Self { port, shared, stop }
    }

    /// The URL of the proxy for a client.
    pub fn url(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    /// Every command sent so far whose name (its first key) is `name`.
    pub fn commands(&self, name: &str) -> Vec<Document> {
        let all = self.shared.commands.lock().unwrap();
        all.iter()
            .filter(|c| c.keys().next().map(String::as_str) == Some(name))
            .cloned()
            .collect()
    }

    /// From now on (until `None`), replies to the command `name` carry a
    /// `writeConcernError`: the write happened on this server, but not at the concern.
    pub fn refuse_write_concern_of(&self, name: Option<&str>) {
        *self.shared.refuse.lock().unwrap() = name.map(str::to_string);
    }

    /// How many replies were given a `writeConcernError`.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// From now on, the answer to an `update` command is held back until `n` update
    /// commands have been sent through the proxy in all (at most 5 s).
    pub fn hold_updates_until_sent(&self, n: usize) {
        *self.shared.hold_until.lock().unwrap() = Some(n);
    }

    /// The most `update` commands that were on their way at once (sent, not answered).
    pub fn updates_open_max(&self) -> usize {
        self.shared.updates_open_max.load(Ordering::SeqCst)
    }
}

impl Shared {
    fn update_sent(&self) {
        self.updates_sent.fetch_add(1, Ordering::SeqCst);
        let open = self.updates_open.fetch_add(1, Ordering::SeqCst) + 1;
        self.updates_open_max.fetch_max(open, Ordering::SeqCst);
        self.sent.notify_waiters();
    }

    /// Waits, if answers are held, until enough updates were sent or the hold ran out; then
    /// the update is answered.
    async fn update_answered(&self) {
        let held = *self.hold_until.lock().unwrap();
        if let Some(n) = held {
            let deadline = tokio::time::Instant::now() + HOLD_AT_MOST;
            loop {
                let sent = self.sent.notified();
                if self.updates_sent.load(Ordering::SeqCst) >= n {
                    break;
                }
                if tokio::time::timeout_at(deadline, sent).await.is_err() {
                    break;
                }
            }
        }
        self.updates_open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for MongoWireProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Copies whole messages from `from` to `to`. Requests (`up`) are recorded, with the
/// command each request id asked for; replies to a refused command are rewritten.
async fn relay(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: Arc<Shared>,
    asked: Arc<Mutex<HashMap<i32, String>>>,
    up: bool,
) {
    loop {
        let mut header = [0u8; 16];
        if from.read_exact(&mut header).await.is_err() {
            break;
        }
        let len = i32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; len.saturating_sub(16)];
        if from.read_exact(&mut rest).await.is_err() {
            break;
        }
        let int = |at: usize| i32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        let (request_id, response_to, opcode) = (int(4), int(8), int(12));
        let mut message = [header.as_slice(), rest.as_slice()].concat();
        if opcode == OP_MSG {
            if let Some(body) = body_of(&rest) {
                if up {
                    let name = body.keys().next().cloned().unwrap_or_default();
                    if name == "update" {
                        shared.update_sent();
                    }
                    asked.lock().unwrap().insert(request_id, name);
                    shared.commands.lock().unwrap().push(body);
                } else {
                    let command = asked.lock().unwrap().remove(&response_to);
                    if command.as_deref() == Some("update") {
                        shared.update_answered().await;
                    }
                    let refuse = shared.refuse.lock().unwrap().clone();
                    if command.is_some() && command == refuse {
                        message = refused(&header, body);
                        shared.refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        if to.write_all(&message).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The body (the kind-0 section) of an OP_MSG after its header; document sequences
/// (kind 1, where drivers put an update's or insert's list) are skipped.
fn body_of(rest: &[u8]) -> Option<Document> {
    let flags = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?);
    let end = rest.len() - if flags & CHECKSUM_PRESENT != 0 { 4 } else { 0 };
    let mut sections = rest.get(4..end)?;
    let mut body = None;
    while let Some((&kind, after)) = sections.split_first() {
        let size = i32::from_le_bytes(after.get(0..4)?.try_into().ok()?) as usize;
        let section = after.get(..size)?;
        if kind == 0 {
            body = Document::from_reader(section).ok();
        }
        sections = &after[size..];
    }
    body
}

/// The reply `body` with a `writeConcernError`, as one OP_MSG with the same ids.
fn refused(header: &[u8; 16], mut body: Document) -> Vec<u8> {
    body.insert(
        "writeConcernError",
        doc! {
            "code": 64,
            "codeName": "WriteConcernTimeout",
            "errmsg": "waiting for replication timed out (injected by the test proxy)",
        },
    );
    let mut doc_bytes = Vec::new();
    body.to_writer(&mut doc_bytes)
        .expect("a document serializes");
    let len = (16 + 4 + 1 + doc_bytes.len()) as i32;
    let mut out = Vec::with_capacity(len as usize);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&header[4..16]);
    out.extend_from_slice(&0u32.to_le_bytes()); // no checksum
    out.push(0);
    out.extend_from_slice(&doc_bytes);
    out
}
