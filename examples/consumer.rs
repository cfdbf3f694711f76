//! An example downstream indexer: binds a durable queue to the document events, keeps an
//! index of each document's published text, acks only after processing, and skips
//! duplicates by `event_id` (delivery is at least once). It does what `docs/events.md`
//! ("What an indexer does, event by event") says: on `document.approved` it reads the
//! MongoDB projection's top level (at the event's version or later) and indexes it; on
//! `document.archived` and `document.expired` it removes the document (a later approval of
//! an expired one indexes it again); every other type leaves the index alone.
//! Run: `cargo run --example consumer -- [queue] [max_events]`.
//!
//! Its index is a map in memory, and a line on stdout stands in for the chunking and
//! embedding: one JSON line per event handled (`action`: `index`, `remove` or `none`), and
//! the whole index (`{"index": {..}}`) when it exits. A real indexer keeps the index, the
//! versions and the seen ids in its own store, with the work, in one transaction.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;
use serde_json::{json, Value};

/// Reads of a projection that is behind the event (a lagging secondary), before the
/// message is left for later.
const READS: usize = 20;
const READ_PAUSE: Duration = Duration::from_millis(50);

/// What the index holds for one document.
enum Slot {
    /// The published text, at `version`.
    Indexed {
        version: i64,
        title: String,
        body: String,
    },
    /// Removed (archived or expired) at this version: nothing older brings it back.
    Removed(i64),
}

struct Indexer {
    projection: Collection<Document>,
    index: BTreeMap<String, Slot>,
    seen: HashSet<String>,
}

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.into())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The first of the service's brokers (a comma-separated list).
    let urls = env_or("APP__AMQP__URLS", "amqp://guest:guest@127.0.0.1:5672/%2f");
    let url = urls.split(',').next().unwrap_or_default().to_string();
    let exchange = env_or("APP__AMQP__EXCHANGE", "kh.document.events");
    let mongo =
        mongodb::Client::with_uri_str(env_or("APP__MONGO__URL", "mongodb://127.0.0.1:27017"))
            .await?;
    let projection = mongo
        .database(&env_or("APP__MONGO__DATABASE", "kh_review"))
        .collection(&env_or("APP__MONGO__COLLECTION", "documents"));
    let mut args = std::env::args().skip(1);
    let queue = args.next().unwrap_or_else(|| "example-indexer".into());
    let max: usize = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(usize::MAX);

    let (conn, ch) = bind_queue(&url, &exchange, &queue).await?;
    let mut indexer = Indexer {
        projection,
        index: BTreeMap::new(),
        seen: HashSet::new(),
    };
    indexer.consume(&ch, &queue, &exchange, max).await?;
    println!("{}", json!({ "index": indexer.snapshot() }));
    conn.close(200, "done".into()).await?;
    Ok(())
}

impl Indexer {
    /// Handles `max` deliveries (a redelivered duplicate and a message left for later count).
    async fn consume(
        &mut self,
        ch: &Channel,
        queue: &str,
        exchange: &str,
        max: usize,
    ) -> anyhow::Result<()> {
        ch.basic_qos(16, BasicQosOptions::default()).await?;
        let mut consumer = ch
            .basic_consume(
                queue.into(),
                "example-consumer".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        eprintln!("consuming from queue {queue} bound to {exchange}");
        let mut handled = 0;
        while let Some(delivery) = consumer.next().await {
            let delivery = delivery?;
            let event: Value = serde_json::from_slice(&delivery.data)?;
            let id = event["event_id"].as_str().unwrap_or_default().to_string();
            if self.seen.contains(&id) {
                eprintln!("duplicate {id} skipped");
                delivery.ack(BasicAckOptions::default()).await?;
            } else if let Some(done) = self.handle(&event).await? {
                println!("{done}");
                self.seen.insert(id);
                delivery.ack(BasicAckOptions::default()).await?;
            } else {
                eprintln!("projection behind event {id}: left on the queue for later");
                let requeue = BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                };
                delivery.nack(requeue).await?;
            }
            handled += 1;
            if handled >= max {
                break;
            }
        }
        Ok(())
    }

    /// Does what the event asks of the index; returns the line that reports it, or None
    /// when the projection is still behind the event (try it again later).
    async fn handle(&mut self, event: &Value) -> anyhow::Result<Option<Value>> {
        let doc_id = event["document_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let version = event["document_version"].as_i64().unwrap_or(0);
        let report = |action: &str, extra: Value| {
            let mut line = json!({
                "event_id": event["event_id"], "event_type": event["event_type"],
                "document_id": doc_id, "document_version": version, "action": action,
            });
            line.as_object_mut()
                .unwrap()
                .extend(extra.as_object().cloned().unwrap_or_default());
            line
        };
        if let Some(Slot::Removed(at)) = self.index.get(&doc_id) {
            if *at >= version {
                let note = format!("removed at version {at}");
                return Ok(Some(report("none", json!({ "note": note }))));
            }
        }
        match event["event_type"].as_str().unwrap_or_default() {
            "document.approved" => {
                let Some(top) = self.published(&doc_id, version).await? else {
                    return Ok(None);
                };
                Ok(Some(self.index_top_level(&doc_id, top, report)))
            }
            "document.archived" | "document.expired" => {
                // Every chunk of the document goes; the tombstone keeps older events from
                // bringing it back (an expired one comes back with a later approval).
                self.index.insert(doc_id.clone(), Slot::Removed(version));
                Ok(Some(report("remove", json!({}))))
            }
            // document.submitted, .rejected, .withdrawn, .commented, review.* and any type
            // added later: the published text is what it was.
            _ => Ok(Some(report("none", json!({})))),
        }
    }

    /// Indexes the projection's top level `top` (read for an approval), unless the index
    /// holds that version or a later one, or the document has been removed since.
    fn index_top_level(
        &mut self,
        doc_id: &str,
        top: Document,
        report: impl Fn(&str, Value) -> Value,
    ) -> Value {
        let version = int(&top, "version");
        let text = |k: &str| top.get_str(k).unwrap_or_default().to_string();
        if text("status") != "APPROVED" {
            // Archived or expired since: its document.archived or .expired follows.
            let note = format!("status {} at version {version}", text("status"));
            return report("none", json!({ "note": note }));
        }
        if let Some(Slot::Indexed { version: held, .. }) = self.index.get(doc_id) {
            if *held >= version {
                return report("none", json!({ "note": format!("version {held} indexed") }));
            }
        }
        let (title, body) = (text("title"), text("body"));
        let line = report(
            "index",
            json!({ "version": version, "title": title, "body": body }),
        );
        // Replaces whatever the index held for the document (the replaced version's chunks).
        self.index.insert(
            doc_id.to_string(),
            Slot::Indexed {
                version,
                title,
                body,
            },
        );
        line
    }

    /// The projection of `doc_id` once its top-level `version` is `min` or later (the
    /// published revision, even while a later revision is drafted or reviewed in
    /// `working`); None if it is still behind after a few reads.
    async fn published(&self, doc_id: &str, min: i64) -> anyhow::Result<Option<Document>> {
        for _ in 0..READS {
            let found = self.projection.find_one(doc! { "_id": doc_id }).await?;
            if let Some(top) = found.filter(|d| int(d, "version") >= min) {
                return Ok(Some(top));
            }
            tokio::time::sleep(READ_PAUSE).await;
        }
        Ok(None)
    }

    /// The index as JSON: each indexed document's version, title and body.
    fn snapshot(&self) -> Value {
        let indexed = self.index.iter().filter_map(|(id, slot)| match slot {
            Slot::Indexed {
                version,
                title,
                body,
            } => Some((
                id.clone(),
                json!({ "version": version, "title": title, "body": body }),
            )),
            Slot::Removed(_) => None,
        });
        Value::Object(indexed.collect())
    }
}

/// An integer field of the projection, whichever BSON width it was written with.
fn int(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Double(n)) => *n as i64,
        _ => 0,
    }
}

/// Connects, declares the exchange and a durable queue, and binds it to every document
/// event (`document.*`), the types it ignores as well.
async fn bind_queue(
    url: &str,
    exchange: &str,
    queue: &str,
) -> anyhow::Result<(Connection, Channel)> {
    let conn = Connection::connect(url, ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    ch.exchange_declare(
        exchange.into(),
        ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await?;
    ch.queue_declare(
        queue.into(),
        QueueDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await?;
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        "document.*".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    Ok((conn, ch))
}
