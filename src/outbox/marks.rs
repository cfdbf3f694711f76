//! Delivery marks, grouped: a request whose outbox row was delivered hands the row to
//! [`Marks`] and answers at once; the rows handed over within `outbox.mark_window_ms` of
//! the first one are marked done by one statement, so a group of approvals shares one
//! commit for its marks (PostgreSQL's group commit, done by the client).
//!
//! Until its mark is written a row stays claimed by its request (`claimed_until`, set at
//! its INSERT `outbox.inline_lease_ms` ahead, far beyond the window), so no dispatcher takes
//! it and the grouping never delivers a row twice. An instance that dies loses at most the
//! marks of one window; those rows are delivered again by the takeover when their lease
//! ends, as any row of an instance that died after COMMIT (at least once, as ever). A
//! transition on a document whose earlier row's mark is still waiting here has its own row
//! left to the dispatchers (the row lock's "earlier row undelivered" rule); its request
//! writes the waiting marks first ([`Marks::flush_if_pending`]) and then delivers it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use uuid::Uuid;

use crate::store::PgStore;

/// A group is written once it holds this many rows, whatever the window.
const MAX_GROUP: usize = 256;

enum Message {
    Mark {
        id: i64,
        document: Uuid,
    },
    /// Write what is waiting now, then answer.
    Flush(oneshot::Sender<()>),
}

/// Documents with a mark handed over and not yet written, and how many.
type Pending = Arc<Mutex<HashMap<Uuid, usize>>>;

pub struct Marks {
    store: PgStore,
    window: Duration,
    pending: Pending,
    /// The writer task's inbox; the task starts with the first mark.
    inbox: OnceLock<mpsc::UnboundedSender<Message>>,
    /// The runtime the writer runs on: the one `new` was called on (the process's main
    /// runtime), never an HTTP worker's, whose end at shutdown would drop a waiting group.
    runtime: tokio::runtime::Handle,
}

impl Marks {
    /// Marks written by groups of `window` (zero: each mark is written at once, by the
    /// request that hands it over). Called inside the runtime the writer is to run on.
    pub fn new(store: PgStore, window: Duration) -> Self {
        Self {
            store,
            window,
            pending: Arc::default(),
            inbox: OnceLock::new(),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Hands over the delivered row `id` of `document` to be marked done with its group.
    pub async fn mark(&self, id: i64, document: Uuid) {
        if self.window.is_zero() {
            return write(&self.store, &[id]).await;
        }
        *self.pending().entry(document).or_default() += 1;
        let sent = self.inbox().send(Message::Mark { id, document });
        if sent.is_err() {
            // The writer is gone (only at the runtime's end): write it here.
            self.written(&[document]);
            write(&self.store, &[id]).await;
        }
    }

    /// Writes the waiting marks now when one of them is `document`'s.
    pub async fn flush_if_pending(&self, document: Uuid) {
        if self.pending().contains_key(&document) {
            self.flush().await;
        }
    }

    /// Writes every mark handed over so far, and returns once they are written (or
    /// failed, which is logged). At shutdown, before the pool closes.
    pub async fn flush(&self) {
        let Some(inbox) = self.inbox.get() else {
            return; // nothing was ever handed over
        };
        let (done, written) = oneshot::channel();
        if inbox.send(Message::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, usize>> {
        self.pending.lock().expect("poisoned")
    }

    fn written(&self, documents: &[Uuid]) {
        forget(&self.pending, documents);
    }

    fn inbox(&self) -> &mpsc::UnboundedSender<Message> {
        self.inbox.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let writer = Writer {
                store: self.store.clone(),
                window: self.window,
                pending: self.pending.clone(),
            };
            self.runtime.spawn(writer.run(rx));
            tx
        })
    }
}

/// The task that writes the groups.
struct Writer {
    store: PgStore,
    window: Duration,
    pending: Pending,
}

impl Writer {
    /// A group starts with the first mark that arrives and ends a window later, when it is
    /// full, or when someone asks for a flush; its rows are then marked in one statement.
    async fn run(self, mut inbox: mpsc::UnboundedReceiver<Message>) {
        let mut group = Group::default();
        while let Some(first) = inbox.recv().await {
            group.take(first);
            let ends = Instant::now() + self.window;
            while group.open() {
                match tokio::time::timeout_at(ends, inbox.recv()).await {
                    Ok(Some(next)) => group.take(next),
                    Ok(None) | Err(_) => break,
                }
            }
            write(&self.store, &group.ids).await;
            forget(&self.pending, &group.documents);
            for waiting in group.flushes.drain(..) {
                let _ = waiting.send(());
            }
            group.ids.clear();
            group.documents.clear();
        }
    }
}

#[derive(Default)]
struct Group {
    ids: Vec<i64>,
    documents: Vec<Uuid>,
    flushes: Vec<oneshot::Sender<()>>,
}

impl Group {
    fn take(&mut self, message: Message) {
        match message {
            Message::Mark { id, document } => {
                self.ids.push(id);
                self.documents.push(document);
            }
            Message::Flush(done) => self.flushes.push(done),
        }
    }

    /// Still taking marks: not full, and nobody waits for it.
    fn open(&self) -> bool {
        self.flushes.is_empty() && self.ids.len() < MAX_GROUP
    }
}

fn forget(pending: &Pending, documents: &[Uuid]) {
    let mut pending = pending.lock().expect("poisoned");
    for d in documents {
        if let Some(n) = pending.get_mut(d) {
            *n -= 1;
            if *n == 0 {
                pending.remove(d);
            }
        }
    }
}

async fn write(store: &PgStore, ids: &[i64]) {
    if let Err(e) = store.mark_done(ids).await {
        tracing::warn!(rows = ids.len(), error = %e, "could not mark delivered outbox rows; dispatchers deliver them again after their lease");
    }
}
