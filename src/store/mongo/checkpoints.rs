//! The audit chains' checkpoints in MongoDB (`audit.checkpoint_collection`, on
//! `audit.checkpoint_url` or the projection's server): insert-only. The service only ever
//! inserts and reads here; it never updates or deletes, so its MongoDB user needs no more
//! than `insert` and `find` on these two collections.
//!
//! A checkpoint is a header, `_id` its sequence (so two writers of one sequence cannot
//! both succeed), inserted last, and its chains in pages of [`PAGE`] in
//! `<collection>_chains`, `_id` `<sequence>/<round>/<page>`: `round` is the writer's own,
//! so pages a failed writer left behind are never read as another's; the header names its
//! round and how many pages it has. A header is only
//! there once all its pages are; its signature covers every chain, so a page removed or
//! changed later is found.

use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{ClientOptions, WriteConcern};
use mongodb::{Client, Collection};
use secrecy::ExposeSecret;
use uuid::Uuid;

use super::{is_duplicate_key, MongoSettings};
use crate::domain::audit::checkpoint::{ChainHead, ChainId, Checkpoint};
use crate::domain::audit::{as_hash, hex, Hash};
use crate::store::AuditSettings;

/// Chains per page document.
const PAGE: usize = 5_000;

/// A checkpoint's header: what a writer links the next one to, and a check starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub sequence: i64,
    pub taken_at: DateTime<Utc>,
    pub prev: Hash,
    pub link: Hash,
    round: String,
    pages: i64,
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    Written,
    /// Another writer wrote this sequence first.
    Taken,
}

#[derive(Clone)]
pub struct CheckpointStore {
    headers: Collection<Document>,
    chains: Collection<Document>,
    timeout: Duration,
    /// The headers' collection, for messages and the event.
    name: String,
}

impl CheckpointStore {
    /// The store `[audit]` names (`checkpoint_url`, else `mongo.url`), in `mongo.database`,
    /// with `mongo`'s timeouts and write concern; does not connect.
    pub async fn from_settings(
        mongo: &MongoSettings,
        audit: &AuditSettings,
    ) -> anyhow::Result<Self> {
        let url = audit.checkpoint_url.as_ref().unwrap_or(&mongo.url);
        let mut opts = ClientOptions::parse(url.expose_secret())
            .await
            .context("invalid audit checkpoint url")?;
        opts.server_selection_timeout = Some(mongo.timeout);
        opts.connect_timeout = Some(mongo.timeout);
        opts.app_name = Some("kh-review-checkpoints".into());
        let w = mongo
            .acknowledgment()
            .map_err(|e| anyhow::anyhow!("mongo.write_concern: {e}"))?;
        let bound = mongo.timeout * 3;
        opts.write_concern = Some(WriteConcern::builder().w(w).w_timeout(bound).build());
        let client = Client::with_options(opts).context("could not build the mongo client")?;
        let db = client.database(&mongo.database);
        let name = audit.checkpoint_collection.clone();
        Ok(Self {
            headers: db.collection(&name),
            chains: db.collection(&format!("{name}_chains")),
            timeout: bound,
            name,
        })
    }

    /// The headers' collection.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| anyhow::anyhow!("mongodb did not answer within {:?}", self.timeout))?
    }

    /// The latest checkpoint's header; None before the first.
    pub async fn latest(&self) -> anyhow::Result<Option<Header>> {
        self.bounded(async {
            let found = self.headers.find_one(doc! {}).sort(doc! {"_id": -1}).await;
            found.context("mongo find")?.map(|d| header(&d)).transpose()
        })
        .await
    }

    /// The header of checkpoint `sequence`.
    pub async fn header(&self, sequence: i64) -> anyhow::Result<Option<Header>> {
        self.bounded(async {
            let found = self.headers.find_one(doc! {"_id": sequence}).await;
            found.context("mongo find")?.map(|d| header(&d)).transpose()
        })
        .await
    }

    /// The whole checkpoint of `h`: its chains, read back from their pages, each by its
    /// `_id` (an index lookup on MongoDB, and on FerretDB, whose `_id` index serves
    /// equality only). A page that is not there leaves its chains out, which the
    /// checkpoint's signature then finds.
    pub async fn load(&self, h: &Header) -> anyhow::Result<Checkpoint> {
        let mut chains = Vec::new();
        for n in 0..h.pages {
            let id = page_id(h.sequence, &h.round, n);
            let page = self
                .bounded(async {
                    let found = self.chains.find_one(doc! {"_id": id}).await;
                    found.context("mongo find")
                })
                .await?;
            let Some(page) = page else { continue };
            for c in page.get_array("chains").context("a page without chains")? {
                chains.push(chain_head(c).context("an unreadable chain entry")?);
            }
        }
        Ok(Checkpoint {
            sequence: h.sequence,
            taken_at: h.taken_at,
            prev: h.prev,
            chains,
            link: h.link,
        })
    }

    /// Inserts `cp`: its pages, then its header.
    pub async fn insert(&self, cp: &Checkpoint) -> anyhow::Result<Inserted> {
        let round = Uuid::now_v7().simple().to_string();
        let pages = cp.chains.chunks(PAGE);
        let count = i64::try_from(pages.len()).unwrap_or(i64::MAX);
        for (n, page) in pages.enumerate() {
            let chains: Vec<Bson> = page.iter().map(|c| Bson::Document(chain_doc(c))).collect();
            let id = page_id(cp.sequence, &round, n as i64);
            let page = doc! {"_id": id, "sequence": cp.sequence, "chains": chains};
            self.bounded(async { self.chains.insert_one(page).await.context("mongo insert") })
                .await?;
        }
        let header = doc! {
            "_id": cp.sequence,
            "taken_at": mongodb::bson::DateTime::from_millis(cp.taken_at.timestamp_millis()),
            "prev": hex(&cp.prev),
            "link": hex(&cp.link),
            "chains": i64::try_from(cp.chains.len()).unwrap_or(i64::MAX),
            "rows": cp.rows(),
            "round": round,
            "pages": count,
        };
        match self
            .bounded(async { Ok(self.headers.insert_one(header).await) })
            .await?
        {
            Ok(_) => Ok(Inserted::Written),
            Err(e) if is_duplicate_key(&e) => Ok(Inserted::Taken),
            Err(e) => Err(anyhow::Error::new(e).context("mongo insert")),
        }
    }
}

fn header(d: &Document) -> anyhow::Result<Header> {
    let link = |k: &str| {
        let text = d
            .get_str(k)
            .with_context(|| format!("a checkpoint without {k}"))?;
        unhex(text).with_context(|| format!("a checkpoint's {k} is not a link"))
    };
    Ok(Header {
        sequence: d
            .get_i64("_id")
            .context("a checkpoint without a sequence")?,
        taken_at: d
            .get_datetime("taken_at")
            .ok()
            .and_then(|t| DateTime::from_timestamp_millis(t.timestamp_millis()))
            .context("a checkpoint without taken_at")?,
        prev: link("prev")?,
        link: link("link")?,
        round: d
            .get_str("round")
            .context("a checkpoint without round")?
            .to_string(),
        pages: d.get_i64("pages").context("a checkpoint without pages")?,
    })
}

/// The `_id` of page `n` of checkpoint `sequence` written in round `round`.
fn page_id(sequence: i64, round: &str, n: i64) -> String {
    format!("{sequence:012}/{round}/{n:05}")
}

fn chain_doc(c: &ChainHead) -> Document {
    let head = c.head.map(|h| Bson::String(hex(&h))).unwrap_or(Bson::Null);
    doc! {"c": c.chain.name(), "n": c.count, "h": head}
}

fn chain_head(b: &Bson) -> Option<ChainHead> {
    let d = b.as_document()?;
    let head = match d.get("h")? {
        Bson::Null => None,
        Bson::String(h) => Some(unhex(h)?),
        _ => return None,
    };
    Some(ChainHead {
        chain: ChainId::parse(d.get_str("c").ok()?)?,
        count: d.get_i64("n").ok()?,
        head,
    })
}

/// A link from its hexadecimal text.
fn unhex(text: &str) -> Option<Hash> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..32)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect();
    as_hash(&bytes?)
}
